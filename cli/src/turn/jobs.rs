//! A turn's job channel (see the module doc of [`crate::turn`]): the poller, and the `sync`, `run`,
//! `ssh_agent` and `push` jobs and the goal's criteria, handled in the turn's loop. The commands they
//! run are in [`super::command`], the ssh-agent in [`super::ssh_agent`], a sync's refresh in
//! [`super::refresh`].

use super::command::{collect, tail_text, wait_for, Ran, OUTPUT_TAIL_BYTES, OUTPUT_TAIL_CHARS, RUN_TIMEOUT_S};
use super::refresh::{refresh, remove};
use super::ssh_agent::TurnAgent;
use super::{changes, exit_code, halting, Baseline, Halt, Msg, TurnDir, TurnRunner, UploadStop};
use crate::runner_client::{CallError, Check, Client, Job, Jobs as Answer, Turn};
use agentsky_wire::runner::{to_value, SshAgentResult, SyncResult};
use serde_json::Value;
use std::collections::VecDeque;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a poll asks the server to wait for jobs.
const POLL_WAIT_S: u64 = 20;

/// A shared stop signal, raised by [`Flag::raise`] or when dropped: whatever watches it cannot outlive
/// its owner.
pub(super) struct Flag(Arc<AtomicBool>);

impl Flag {
    pub fn new() -> Self {
        Self(Arc::default())
    }

    pub fn share(&self) -> Arc<AtomicBool> {
        self.0.clone()
    }

    pub fn raise(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl Drop for Flag {
    fn drop(&mut self) {
        self.raise();
    }
}

/// The jobs of one turn: handled one at a time, in the order they came.
pub(super) struct Jobs {
    /// Raised when the agent's command exits or the turn ends: the poller stops, and a `run` job still
    /// going is ended.
    over: Flag,
    pub queue: VecDeque<Job>,
    /// The `run` job going, if any (its result comes as [`Msg::JobDone`]).
    pub running: Option<String>,
    tx: mpsc::Sender<Msg>,
    /// The turn's ssh-agent, once a job or a granted command needed it; ended when this is dropped.
    agent: TurnAgent,
}

impl Jobs {
    /// Starts polling for the lease's jobs; they arrive on `tx` as [`Msg::Job`].
    pub fn start(client: &Client, lease: &str, tx: mpsc::Sender<Msg>, agent: TurnAgent) -> Self {
        let over = Flag::new();
        poll(client.clone(), lease.to_owned(), over.share(), tx.clone());
        Self { over, queue: VecDeque::new(), running: None, tx, agent }
    }

    /// No more jobs: the poller stops (after its current poll, in the background) and a `run` job still
    /// going is ended.
    pub fn close(&self) {
        self.over.raise();
    }

    /// Ends the turn's ssh-agent and its socket, with every key it held (a revoked grant); `true` when
    /// there was one.
    pub fn forget_agent(&mut self) -> bool {
        self.agent.forget()
    }
}

impl Drop for Jobs {
    /// The turn is over: its ssh-agent ends, whoever else still holds a handle on it.
    fn drop(&mut self) {
        self.agent.forget();
    }
}

/// Long-polls `/v1/runner/jobs` until `over` is raised, the server has no job channel (404), or the lease
/// is gone (the turn's loop learns that from its own calls). `seen` is every job passed on, so none
/// comes twice.
fn poll(client: Client, lease: String, over: Arc<AtomicBool>, tx: mpsc::Sender<Msg>) {
    std::thread::spawn(move || {
        let mut seen: Vec<String> = Vec::new();
        let mut pause = Duration::from_secs(1);
        while !over.load(Ordering::SeqCst) {
            let asked = Instant::now();
            let fresh: Vec<Job> = match client.jobs(&lease, POLL_WAIT_S, &seen) {
                Ok(None) | Err(CallError::LeaseLost(_) | CallError::Unauthorized(_)) => return,
                Ok(Some(Answer { stop: Some(stop), .. })) => {
                    if !over.load(Ordering::SeqCst) {
                        let _ = tx.send(Msg::Stop(stop));
                    }
                    return;
                }
                Ok(Some(answer)) => {
                    pause = Duration::from_secs(1);
                    answer.jobs.into_iter().filter(|j| !seen.contains(&j.job_id)).collect()
                }
                Err(_) => {
                    nap(&over, pause);
                    pause = (pause * 2).min(Duration::from_secs(10));
                    continue;
                }
            };
            if over.load(Ordering::SeqCst) {
                return;
            }
            // A server that answers at once with nothing new is not asked again in a tight loop.
            if fresh.is_empty() && asked.elapsed() < Duration::from_millis(250) {
                nap(&over, Duration::from_secs(1));
            }
            for job in fresh {
                seen.push(job.job_id.clone());
                if tx.send(Msg::Job(job)).is_err() {
                    return;
                }
            }
        }
    });
}

/// Sleeps up to `d`, waking early when `over` is raised.
fn nap(over: &AtomicBool, d: Duration) {
    let until = Instant::now() + d;
    while !over.load(Ordering::SeqCst) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50).min(until.saturating_duration_since(Instant::now())));
    }
}

impl TurnRunner {
    /// Runs `line` with `sh -c` in `work/`, with the agent's environment, under a supervisor of its own
    /// (so it dies with the runner too), stdin empty, stdout and stderr in one pipe. A thread waits for
    /// it — up to `timeout`, or until `cancel` is raised, then its process group is ended — and hands
    /// `done` what it ended with.
    pub(super) fn start_command(
        &self,
        turn: &Turn,
        dir: &TurnDir,
        line: &str,
        timeout: Duration,
        cancel: Arc<AtomicBool>,
        done: impl FnOnce(Ran) + Send + 'static,
    ) -> std::io::Result<()> {
        let mut cmd = if cfg!(unix) {
            let mut c = self.in_turn(&self.sky_exe, turn, dir);
            // `exec 2>&1` first: both streams in one pipe keep their order.
            c.args(["__supervise", "/dev/null", "sh", "-c"]).arg(format!("exec 2>&1\n{line}"));
            c.stdin(Stdio::piped());
            c
        } else {
            let argv = crate::command_line::shell_command(line);
            let mut c = self.in_turn(&argv[0], turn, dir);
            c.args(&argv[1..]).stdin(Stdio::null());
            c
        };
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn()?;
        let lifeline = child.stdin.take();
        let output: Arc<Mutex<Vec<u8>>> = Arc::default();
        let (open, closed) = mpsc::channel::<()>();
        if let Some(out) = child.stdout.take() {
            collect(out, output.clone(), open.clone());
        }
        if let Some(err) = child.stderr.take() {
            collect(err, output.clone(), open);
        }
        let secrets = self.secrets(turn);
        let grace = self.timing.stop_grace;
        std::thread::spawn(move || {
            let (status, timed_out, ended) = wait_for(child, lifeline, timeout, &cancel, grace);
            // The pipes close when the group is gone; a process that left the group may hold them open,
            // so that is not waited for long.
            let until = Instant::now() + Duration::from_secs(2);
            while closed.recv_timeout(until.saturating_duration_since(Instant::now())).is_ok() {}
            let bytes = output.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let error = match (status, ended && !timed_out) {
                (_, true) => Some("ended: the turn or the agent's command ended first".to_owned()),
                (None, false) if !timed_out => Some("its exit status could not be read".to_owned()),
                _ => None,
            };
            done(Ran {
                exit_code: status.filter(|_| !ended).map(|s| exit_code(&s)),
                timed_out,
                output: tail_text(&bytes, &secrets, OUTPUT_TAIL_CHARS, OUTPUT_TAIL_BYTES),
                error,
            })
        });
        Ok(())
    }

    /// Starts a `run` job on a thread of its own, reporting through the loop's channel; `Err` is the
    /// job's result when it cannot start.
    pub(super) fn start_run(&self, turn: &Turn, dir: &TurnDir, job: &Job, jobs: &Jobs) -> Result<(), Value> {
        let Some(line) = job.spec.command.as_deref().filter(|c| !c.trim().is_empty()) else {
            return Err(Ran::failed("the job has no command".into()).to_json());
        };
        let timeout = Duration::from_secs(job.spec.timeout_s.unwrap_or(RUN_TIMEOUT_S));
        let (tx, id) = (jobs.tx.clone(), job.job_id.clone());
        self.start_command(turn, dir, line, timeout, jobs.over.share(), move |ran| {
            let _ = tx.send(Msg::JobDone(id, ran.to_json()));
        })
        .map_err(|e| Ran::failed(format!("cannot run the command: {e}")).to_json())
    }

    /// Starts a `push` job ([`super::push`]) on a thread of its own; its result comes as [`Msg::JobDone`].
    pub(super) fn start_push(&self, turn: &Turn, job: &Job, jobs: &Jobs) {
        let (tx, job) = (jobs.tx.clone(), job.clone());
        let (client, lease, scratch, path, roots) = (
            self.client.clone(),
            turn.lease_id.clone(),
            self.scratch.clone(),
            self.path.clone(),
            self.push_roots.clone(),
        );
        std::thread::spawn(move || {
            let result = super::push::push(&client, &lease, &scratch, path.as_ref(), &roots, &job);
            let _ = tx.send(Msg::JobDone(job.job_id, result));
        });
    }

    /// Runs the goal's criteria commands one at a time, each like a `run` job (600 s), renewing the lease
    /// meanwhile: the `checks` of the final post, and a status line naming them.
    pub(super) fn run_criteria(
        &self,
        turn: &Turn,
        dir: &TurnDir,
        last_renewal: &mut Instant,
    ) -> Result<(Vec<Check>, Option<String>), Halt> {
        let lease = turn.lease_id.as_str();
        let commands = match self.retrying(|| self.client.criteria(lease)) {
            Ok(c) => c,
            Err(e) => {
                let e = halting(e)?;
                return Ok((vec![], Some(format!("The goal's criteria could not be fetched ({e}); none were run."))));
            }
        };
        // Dropped on the way out, stop or lost lease included: a check still going is ended.
        let cancel = Flag::new();
        let timeout = Duration::from_secs(RUN_TIMEOUT_S);
        let (mut checks, mut said) = (Vec::new(), Vec::new());
        for command in commands {
            let (tx, rx) = mpsc::channel();
            let started = self.start_command(turn, dir, &command, timeout, cancel.share(), move |ran| {
                let _ = tx.send(ran);
            });
            let ran = match started {
                Ok(()) => loop {
                    match rx.recv_timeout(self.timing.heartbeat.min(Duration::from_secs(1))) {
                        Ok(ran) => break ran,
                        Err(mpsc::RecvTimeoutError::Timeout) => self.keep_lease(lease, last_renewal)?,
                        Err(mpsc::RecvTimeoutError::Disconnected) => break Ran::failed("its watcher ended".into()),
                    }
                },
                Err(e) => Ran::failed(format!("cannot run it: {e}")),
            };
            said.push(ran.describe(&command, timeout));
            checks.push(ran.check(command));
        }
        let status = (!said.is_empty()).then(|| format!("Goal criteria: {}.", said.join("; ")));
        Ok((checks, status))
    }

    /// A `sync` job: uploads what changed against `baseline` (as the end-of-turn upload does) and makes
    /// that the baseline, then writes in each server file the agent has not touched since its baseline.
    pub(super) fn sync(
        &self,
        lease: &str,
        work: &Path,
        baseline: &mut Baseline,
        last_renewal: &mut Instant,
    ) -> Result<Value, Halt> {
        let c = changes(work, baseline);
        let sent = match self.upload(lease, c.upload, &c.deleted, last_renewal) {
            Ok(sent) => sent,
            Err(UploadStop::Halt(h)) => return Err(h),
            Err(UploadStop::Failed(path, e)) => return sync_failed(e, &format!("uploading {path}")),
        };
        let mut skipped = c.skipped;
        skipped.extend(sent.refused.into_iter().map(|(path, why)| format!("{path} (not uploaded: {why})")));
        let mut uploaded = Vec::new();
        for (path, content) in sent.written {
            uploaded.push(path.clone());
            baseline.wrote(&path, content);
        }
        for path in &sent.deleted {
            baseline.forget(path);
        }
        let server = match self.retrying(|| self.client.files(lease)) {
            Ok(files) => files,
            Err(e) => return sync_failed(e, "reading the task's files"),
        };
        // The turn's skills are not task files: the server never has them, and they stay.
        let gone: Vec<String> =
            baseline.task_paths().filter(|p| !server.iter().any(|(path, _)| path == *p)).cloned().collect();
        let mut refreshed = Vec::new();
        for (path, content) in server {
            match refresh(work, baseline, &path, content) {
                Ok(true) => refreshed.push(path),
                Ok(false) => {}
                Err(why) => skipped.push(format!("{path} (not refreshed: {why})")),
            }
        }
        let mut removed = Vec::new();
        for path in gone {
            match remove(work, baseline, &path) {
                Ok(true) => removed.push(path),
                Ok(false) => {}
                Err(why) => skipped.push(format!("{path} (not removed: {why})")),
            }
        }
        Ok(to_value(&SyncResult {
            ok: true,
            uploaded: Some(uploaded),
            deleted: Some(sent.deleted),
            refreshed: Some(refreshed),
            removed: Some(removed),
            skipped: Some(skipped),
            error: None,
        }))
    }

    /// An `ssh_agent` job: starts the turn's ssh-agent if it has none, and loads the job's key into it.
    pub(super) fn ssh_agent_job(&self, lease: &str, job: &Job, dir: &TurnDir, jobs: &mut Jobs) -> Result<Value, Halt> {
        let key = match self.retrying(|| self.client.ssh_key(lease, &job.job_id)) {
            Ok(k) => k,
            Err(e) => {
                let why = format!("the server did not hand out the key ({})", halting(e)?);
                return Ok(to_value(&SshAgentResult { socket_path: None, error: Some(why) }));
            }
        };
        let loaded = jobs.agent.load(&self.sky_exe, self.path.as_ref(), &dir.meta, &key, job.spec.ttl_s);
        drop(key);
        Ok(to_value(&match loaded {
            Ok(socket) => SshAgentResult { socket_path: Some(socket.to_string_lossy().into_owned()), error: None },
            Err(why) => SshAgentResult { socket_path: None, error: Some(why) },
        }))
    }
}

/// A sync that could not finish: a lost lease or a refused token ends the turn; anything else is the
/// job's answer.
fn sync_failed(e: CallError, what: &str) -> Result<Value, Halt> {
    let e = halting(e)?;
    Ok(to_value(&SyncResult { ok: false, error: Some(format!("{what} failed: {e}")), ..SyncResult::default() }))
}
