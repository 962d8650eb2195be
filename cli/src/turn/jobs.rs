//! A turn's job channel (see the module doc of [`crate::turn`]): the poller, the `sync`, `run` and
//! `ssh_agent` jobs, the turn's own ssh-agent, and the commands of the goal's criteria, which run like
//! `run` jobs.

use super::{changes, describe_exit, exit_code, halting, safe_relative, Halt, Msg, TurnDir, TurnRunner, UploadStop};
use crate::runner::{CallError, Client, Job, Turn};
use serde_json::{json, Value};
use std::collections::{BTreeMap, VecDeque};
use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a poll asks the server to wait for jobs.
const POLL_WAIT_S: u64 = 20;
/// A `run` job's time limit when it names none, and each criteria command's.
pub const RUN_TIMEOUT_S: u64 = 600;
/// How much of a command's output its result carries: the last 8000 characters, and no more than the
/// server takes of a check's output (16 KiB).
pub const OUTPUT_TAIL_CHARS: usize = 8000;
pub const OUTPUT_TAIL_BYTES: usize = 16_000;
/// The output kept while a command runs: enough more than the tail that masking a token never meets
/// the cut (a buffer of nothing but tokens still masks to well over the tail).
const OUTPUT_KEEP_BYTES: usize = 64 * 1024;
/// How long a new ssh-agent may take to make its socket.
const AGENT_START: Duration = Duration::from_secs(5);
/// How long `ssh-add` may take (a key with a passphrase would wait for one forever).
const ADD_KEY_LIMIT: Duration = Duration::from_secs(10);

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

/// The turn's own ssh-agent, started on first need and shared by the job channel and the granted
/// commands ([`super::granted`]).
#[derive(Clone, Default)]
pub(super) struct TurnAgent(Arc<Mutex<Option<SshAgent>>>);

impl TurnAgent {
    /// Loads `key` (for `ttl_s` seconds, or as long as the agent lives) into the turn's agent, starting it
    /// first when there is none: the agent's socket.
    pub fn load(
        &self,
        sky: &Path,
        path: Option<&OsString>,
        meta: &Path,
        key: &str,
        ttl_s: Option<u64>,
    ) -> Result<PathBuf, String> {
        let mut slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let agent = match slot.take() {
            Some(a) => a,
            None => SshAgent::start(sky, path, meta)?,
        };
        let agent = slot.insert(agent);
        agent.add(key, ttl_s, path)?;
        Ok(agent.socket.clone())
    }

    /// Ends the agent, its socket and every key it held; `true` when there was one.
    pub fn forget(&self) -> bool {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take().is_some()
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
                Ok(Some(answer)) if answer.stop => {
                    if !over.load(Ordering::SeqCst) {
                        let _ = tx.send(Msg::SessionStopped);
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

/// What a command run for a job or a criterion ended with.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Ran {
    /// `None` when it was ended (timed out, or the turn ended first) or could not be run.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// The last [`OUTPUT_TAIL_CHARS`] of stdout and stderr together, tokens masked.
    pub output: String,
    /// Why it has no exit code, when it did not time out.
    pub error: Option<String>,
}

impl Ran {
    fn failed(why: String) -> Self {
        Self { exit_code: None, timed_out: false, output: String::new(), error: Some(why) }
    }

    /// A `run` job's result.
    pub fn to_json(&self) -> Value {
        let mut v = json!({ "exit_code": self.exit_code, "timed_out": self.timed_out, "output": self.output });
        if let Some(e) = &self.error {
            v["error"] = json!(e);
        }
        v
    }

    /// ``"`make test` exited 0"``, for the status event.
    pub fn describe(&self, command: &str, timeout: Duration) -> String {
        match (self.exit_code, self.timed_out, &self.error) {
            (Some(c), _, _) => format!("`{command}` exited {c}"),
            (None, true, _) => format!("`{command}` timed out after {} s", timeout.as_secs()),
            (None, false, Some(why)) => format!("`{command}` did not finish ({why})"),
            (None, false, None) => format!("`{command}` did not finish"),
        }
    }
}

/// The end of `bytes` as text — at most `max_chars` characters in at most `max_bytes` bytes — with
/// `secrets` masked and the redaction rule applied first, so a cut never leaves part of one.
pub fn tail_text(bytes: &[u8], secrets: &[String], max_chars: usize, max_bytes: usize) -> String {
    let mut text = String::from_utf8_lossy(bytes).into_owned();
    for s in secrets {
        text = crate::redact(&text, s);
    }
    text = crate::redaction::redact(&text);
    let mut start = text.len();
    for (n, (i, _)) in text.char_indices().rev().enumerate() {
        if n == max_chars || text.len() - i > max_bytes {
            break;
        }
        start = i;
    }
    text.split_off(start)
}

/// Appends what `from` says to `into`, keeping its last [`OUTPUT_KEEP_BYTES`]; `open` is dropped at the
/// end of the stream.
fn collect(mut from: impl Read + Send + 'static, into: Arc<Mutex<Vec<u8>>>, open: mpsc::Sender<()>) {
    std::thread::spawn(move || {
        let _open = open;
        let mut buf = [0u8; 8192];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 {
                break;
            }
            let mut out = into.lock().unwrap_or_else(|e| e.into_inner());
            out.extend_from_slice(&buf[..n]);
            let extra = out.len().saturating_sub(OUTPUT_KEEP_BYTES);
            out.drain(..extra);
        }
    });
}

/// Waits for a command; past `timeout`, or once `cancel` is raised, ends it (closing the supervisor's
/// lifeline: SIGTERM to its group, SIGKILL after the supervisor's grace). `(status, timed out, ended)`.
pub(super) fn wait_for(
    mut child: Child,
    mut lifeline: Option<ChildStdin>,
    timeout: Duration,
    cancel: &AtomicBool,
    grace: Duration,
) -> (Option<ExitStatus>, bool, bool) {
    let started = Instant::now();
    let (mut ending, mut timed_out): (Option<Instant>, bool) = (None, false);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return (Some(status), timed_out, ending.is_some()),
            Err(_) => return (None, timed_out, ending.is_some()),
            Ok(None) => {}
        }
        match ending {
            None if started.elapsed() >= timeout || cancel.load(Ordering::SeqCst) => {
                timed_out = started.elapsed() >= timeout;
                drop(lifeline.take());
                if !cfg!(unix) {
                    let _ = child.kill();
                }
                ending = Some(Instant::now());
            }
            Some(at) if at.elapsed() > grace.max(Duration::from_secs(3)) + Duration::from_secs(2) => {
                let _ = child.kill();
                let _ = child.wait();
                return (None, timed_out, true);
            }
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(50));
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
            let argv = crate::runner::shell_command(line);
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
        let Some(line) = job.command.as_deref().filter(|c| !c.trim().is_empty()) else {
            return Err(Ran::failed("the job has no command".into()).to_json());
        };
        let timeout = Duration::from_secs(job.timeout_s.unwrap_or(RUN_TIMEOUT_S));
        let (tx, id) = (jobs.tx.clone(), job.job_id.clone());
        self.start_command(turn, dir, line, timeout, jobs.over.share(), move |ran| {
            let _ = tx.send(Msg::JobDone(id, ran.to_json()));
        })
        .map_err(|e| Ran::failed(format!("cannot run the command: {e}")).to_json())
    }

    /// Runs the goal's criteria commands one at a time, each like a `run` job (600 s), renewing the lease
    /// meanwhile: the `checks` of the final post, and a status line naming them.
    pub(super) fn run_criteria(
        &self,
        turn: &Turn,
        dir: &TurnDir,
        last_renewal: &mut Instant,
    ) -> Result<(Vec<Value>, Option<String>), Halt> {
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
            checks.push(json!({
                "command": command, "exit_code": ran.exit_code, "timed_out": ran.timed_out, "output": ran.output,
            }));
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
        baseline: &mut BTreeMap<String, String>,
        last_renewal: &mut Instant,
    ) -> Result<Value, Halt> {
        let c = changes(work, baseline);
        let sent = match self.upload(lease, c.upload, last_renewal) {
            Ok(sent) => sent,
            Err(UploadStop::Halt(h)) => return Err(h),
            Err(UploadStop::Failed(path, e)) => return sync_failed(e, &format!("uploading {path}")),
        };
        let mut skipped = c.skipped;
        skipped.extend(sent.refused.into_iter().map(|(path, why)| format!("{path} (not uploaded: {why})")));
        let mut uploaded = Vec::new();
        for (path, content) in sent.written {
            uploaded.push(path.clone());
            baseline.insert(path, content);
        }
        let server = match self.retrying(|| self.client.files(lease)) {
            Ok(files) => files,
            Err(e) => return sync_failed(e, "reading the task's files"),
        };
        let mut refreshed = Vec::new();
        for (path, content) in server {
            match refresh(work, baseline, &path, content) {
                Ok(true) => refreshed.push(path),
                Ok(false) => {}
                Err(why) => skipped.push(format!("{path} (not refreshed: {why})")),
            }
        }
        Ok(json!({ "ok": true, "uploaded": uploaded, "refreshed": refreshed, "skipped": skipped }))
    }

    /// An `ssh_agent` job: starts the turn's ssh-agent if it has none, and loads the job's key into it.
    pub(super) fn ssh_agent_job(&self, lease: &str, job: &Job, dir: &TurnDir, jobs: &mut Jobs) -> Result<Value, Halt> {
        let key = match self.retrying(|| self.client.ssh_key(lease, &job.job_id)) {
            Ok(k) => k,
            Err(e) => return Ok(json!({ "error": format!("the server did not hand out the key ({})", halting(e)?) })),
        };
        let loaded = jobs.agent.load(&self.sky_exe, self.path.as_ref(), &dir.meta, &key, job.ttl_s);
        drop(key);
        Ok(match loaded {
            Ok(socket) => json!({ "socket_path": socket.to_string_lossy() }),
            Err(why) => json!({ "error": why }),
        })
    }
}

/// A sync that could not finish: a lost lease or a refused token ends the turn; anything else is the
/// job's answer.
fn sync_failed(e: CallError, what: &str) -> Result<Value, Halt> {
    let e = halting(e)?;
    Ok(json!({ "ok": false, "error": format!("{what} failed: {e}") }))
}

/// A file of `work/` as the refresh sees it.
#[derive(PartialEq)]
enum Local {
    Absent,
    Text(String),
    /// A symlink, a folder, or not UTF-8 text: never overwritten.
    Other,
}

fn local(p: &Path) -> Local {
    match std::fs::symlink_metadata(p) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Local::Absent,
        Ok(m) if m.is_file() => match std::fs::read(p).map(String::from_utf8) {
            Ok(Ok(text)) => Local::Text(text),
            _ => Local::Other,
        },
        _ => Local::Other,
    }
}

/// Writes a server file into `work` when the agent has not changed it since `baseline` (absent in both
/// counts as unchanged, so new server files arrive and files the agent deleted stay deleted), and makes
/// it the baseline. `Ok(true)` when written.
fn refresh(work: &Path, baseline: &mut BTreeMap<String, String>, path: &str, content: String) -> Result<bool, String> {
    let rel = safe_relative(path).ok_or("an unsafe path")?;
    let p = work.join(&rel);
    let here = local(&p);
    if matches!(&here, Local::Text(t) if *t == content) {
        baseline.insert(path.to_owned(), content);
        return Ok(false);
    }
    let untouched = match &here {
        Local::Absent => !baseline.contains_key(path),
        Local::Text(t) => baseline.get(path) == Some(t),
        Local::Other => false,
    };
    if !untouched {
        return Ok(false);
    }
    // Never through a symlinked folder the agent made: that could write outside `work/`.
    let mut at = work.to_owned();
    for part in rel.parent().into_iter().flat_map(Path::components) {
        at.push(part);
        if std::fs::symlink_metadata(&at).is_ok_and(|m| !m.is_dir()) {
            return Err(format!("{} is not a folder here", at.strip_prefix(work).unwrap_or(&at).display()));
        }
    }
    p.parent().map(std::fs::create_dir_all).transpose().map_err(|e| e.to_string())?;
    std::fs::write(&p, &content).map_err(|e| e.to_string())?;
    baseline.insert(path.to_owned(), content);
    Ok(true)
}

/// The turn's own ssh-agent (`ssh-agent -D -a <meta>/ssh/agent.sock`), a child of the runner under a
/// supervisor — not in the agent's process group, and gone with the runner even when it is killed. When
/// dropped it is ended (which removes its socket) and its owner-only folder is removed.
pub(super) struct SshAgent {
    child: Child,
    lifeline: Option<ChildStdin>,
    dir: PathBuf,
    pub socket: PathBuf,
}

impl SshAgent {
    fn start(sky: &Path, path: Option<&OsString>, meta: &Path) -> Result<Self, String> {
        if !cfg!(unix) {
            return Err("ssh_agent jobs need a runner on Unix".into());
        }
        let dir = std::path::absolute(meta.join("ssh")).map_err(|e| format!("cannot make the agent's folder: {e}"))?;
        crate::files::create_private_dir(&dir).map_err(|e| format!("cannot make the agent's folder: {e}"))?;
        let socket = dir.join("agent.sock");
        // Unix socket paths hold about 104 bytes.
        if socket.as_os_str().len() > 100 {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(format!(
                "the agent's socket path {} is too long for a Unix socket; run the runner with a shorter TMPDIR",
                socket.display()
            ));
        }
        let mut cmd = Command::new(sky);
        cmd.args(["__supervise", "/dev/null", "ssh-agent", "-D", "-a"])
            .arg(&socket)
            .env_remove("SSH_AUTH_SOCK")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(p) = path {
            cmd.env("PATH", p);
        }
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(format!("cannot start ssh-agent: {e}"));
            }
        };
        let lifeline = child.stdin.take();
        let mut agent = SshAgent { child, lifeline, dir, socket };
        let deadline = Instant::now() + AGENT_START;
        while !agent.socket.exists() {
            if let Ok(Some(status)) = agent.child.try_wait() {
                return Err(match status.code() {
                    Some(127) => "ssh-agent is not installed on this runner".into(),
                    _ => format!("ssh-agent {}", describe_exit(&status)),
                });
            }
            if Instant::now() >= deadline {
                return Err(format!("ssh-agent made no socket within {} s", AGENT_START.as_secs()));
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        Ok(agent)
    }

    /// Loads a private key — written to `ssh-add`'s stdin, never to disk — for `ttl_s` seconds, or for
    /// as long as the agent lives.
    fn add(&self, key: &str, ttl_s: Option<u64>, path: Option<&OsString>) -> Result<(), String> {
        let mut cmd = Command::new("ssh-add");
        if let Some(t) = ttl_s {
            cmd.arg("-t").arg(t.to_string());
        }
        cmd.arg("-")
            .env("SSH_AUTH_SOCK", &self.socket)
            .env_remove("SSH_AGENT_PID")
            .env("SSH_ASKPASS_REQUIRE", "never")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some(p) = path {
            cmd.env("PATH", p);
        }
        // Off the runner's terminal: a passphrase prompt cannot take it over.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = cmd.spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => "ssh-add is not installed on this runner".to_owned(),
            _ => format!("cannot run ssh-add: {e}"),
        })?;
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(key.as_bytes());
            if !key.ends_with('\n') {
                let _ = stdin.write_all(b"\n");
            }
        }
        let mut stderr = child.stderr.take();
        let said = std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(e) = stderr.as_mut() {
                let _ = e.read_to_string(&mut s);
            }
            s
        });
        let deadline = Instant::now() + ADD_KEY_LIMIT;
        let status = loop {
            match child.try_wait() {
                Ok(Some(s)) => break s,
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(25)),
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!(
                        "ssh-add did not finish within {} s (does the key want a passphrase?)",
                        ADD_KEY_LIMIT.as_secs()
                    ));
                }
            }
        };
        if status.success() {
            return Ok(());
        }
        let said = said.join().unwrap_or_default();
        Err(format!("ssh-add refused the key ({}): {}", describe_exit(&status), said.trim()))
    }
}

impl Drop for SshAgent {
    fn drop(&mut self) {
        // The supervisor sends SIGTERM (ssh-agent removes its socket), SIGKILL 3 s later.
        drop(self.lifeline.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_output_tail_is_masked_before_it_is_cut() {
        let token = "sst_secret_token_value_0123456789".to_owned();
        let text = format!("{}{token} end", "x".repeat(50));
        let tail = tail_text(text.as_bytes(), std::slice::from_ref(&token), 20, 100);
        assert_eq!(tail, "xxxsst_secret_t… end");
        assert!(!tail.contains("0123456789"), "{tail}");
        let printed = tail_text(b"ok\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENG done", &[], 8000, 16_000);
        assert_eq!(printed, "ok\nAWS_SECRET_ACCESS_KEY=[redacted] done");
        assert_eq!(tail_text("héllo".as_bytes(), &[], 4, 100), "éllo");
        assert_eq!(tail_text("héllo".as_bytes(), &[], 4, 4), "llo");
        assert_eq!(tail_text(b"short", &[], 8000, 16_000), "short");
        let wide = "中".repeat(OUTPUT_TAIL_CHARS);
        assert_eq!(tail_text(wide.as_bytes(), &[], OUTPUT_TAIL_CHARS, OUTPUT_TAIL_BYTES).len(), 15_999);
    }

    #[test]
    fn a_refresh_writes_only_what_the_agent_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_owned();
        std::fs::create_dir_all(&dir).unwrap();
        let w = |p: &str, t: &str| std::fs::write(dir.join(p), t).unwrap();
        w("same.md", "old");
        w("mine.md", "agent's");
        let mut base: BTreeMap<String, String> =
            [("same.md", "old"), ("mine.md", "old"), ("deleted.md", "old")].map(|(a, b)| (a.into(), b.into())).into();
        let mut r = |p: &str, t: &str| refresh(&dir, &mut base, p, t.into());
        assert_eq!(r("same.md", "server's"), Ok(true));
        assert_eq!(r("mine.md", "server's"), Ok(false));
        assert_eq!(r("deleted.md", "server's"), Ok(false));
        assert_eq!(r("new/file.md", "new"), Ok(true));
        assert!(r("../escape.md", "x").is_err());
        assert_eq!(std::fs::read_to_string(dir.join("same.md")).unwrap(), "server's");
        assert_eq!(std::fs::read_to_string(dir.join("mine.md")).unwrap(), "agent's");
        assert!(!dir.join("deleted.md").exists());
        assert_eq!(std::fs::read_to_string(dir.join("new/file.md")).unwrap(), "new");
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("/tmp", dir.join("out")).unwrap();
            assert!(r("out/x.md", "x").unwrap_err().contains("not a folder"));
        }
        assert_eq!(base["same.md"], "server's");
        assert_eq!(base["mine.md"], "old");
    }
}
