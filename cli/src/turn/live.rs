//! A turn while its command runs, and just after: the loop that posts its output every second, renews
//! the lease every ten and handles the server's jobs, then the wind-down once the command exits (no more
//! jobs, the rest of the output read and posted). See the module doc of [`crate::turn`].

#[cfg(unix)]
use super::granted;
use super::jobs::Jobs;
use super::{halting, take_line, Baseline, Ended, Halt, Msg, Outbox, Plan, Running, TurnDir, TurnRunner};
use crate::runner_client::{CallError, Job, JobKind, Turn};
use agentsky_wire::runner::{to_value, ForgetResult};
use serde_json::Value;
use std::io::Write;
use std::process::ExitStatus;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A started turn: its command, its channels, its output on the way and its folder. Fields drop in
/// order, so the jobs (a `run` job's command, the ssh-agent) and the granted-command channel end before
/// the turn's folder goes.
pub(super) struct Live {
    pub jobs: Jobs,
    #[cfg(unix)]
    pub channel: Option<granted::Channel>,
    pub running: Running,
    pub rx: mpsc::Receiver<Msg>,
    pub plan: Plan,
    pub outbox: Outbox,
    /// What `work/` is compared against: the download, moved on by `sync` jobs.
    pub baseline: Baseline,
    /// Said in the turn's status event after the upload (files not downloaded, skills not written, …).
    pub notes: Vec<String>,
    pub last_renewal: Instant,
    /// The command's output streams not closed yet.
    pub open_streams: usize,
    pub dir: TurnDir,
}

impl TurnRunner {
    /// While the command runs: output posted every second, the lease renewed every ten, jobs handled.
    /// The command's exit status, or why the turn must end now.
    pub(super) fn watch(&self, turn: &Turn, live: &mut Live, log: &mut dyn Write) -> Result<ExitStatus, Halt> {
        let mut next_beat = Instant::now() + self.timing.heartbeat;
        let mut next_flush = Instant::now() + self.timing.flush;
        loop {
            let now = Instant::now();
            let until = next_beat.min(next_flush).saturating_duration_since(now).min(Duration::from_millis(200));
            match live.rx.recv_timeout(until) {
                Ok(msg) => self.on_message(turn, live, msg, log)?,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => live.open_streams = 0,
            }
            if let Ok(Some(status)) = live.running.child.try_wait() {
                return Ok(status);
            }
            self.next_jobs(turn, &live.dir, &mut live.jobs, &mut live.baseline, &mut live.last_renewal, log)?;
            let now = Instant::now();
            if now >= next_flush {
                next_flush = now + self.timing.flush;
                self.flush(&mut live.outbox, log)?;
            }
            if now >= next_beat {
                next_beat = self.beat(&turn.lease_id, &mut live.last_renewal, now, log)?;
            }
        }
    }

    /// One message from the turn's threads while the command runs.
    fn on_message(&self, turn: &Turn, live: &mut Live, msg: Msg, log: &mut dyn Write) -> Result<(), Halt> {
        let lease = turn.lease_id.as_str();
        match msg {
            Msg::Line(s, l) => take_line(&mut live.outbox, &mut live.plan, s, &l),
            Msg::Closed => live.open_streams -= 1,
            // A revoked grant is acted on at once, not after the jobs before it.
            Msg::Job(job) if matches!(job.kind, JobKind::GrantForget | JobKind::SshForget) => {
                let result = forget(live, &job);
                self.report(lease, &job.job_id, &result, log)?;
            }
            Msg::Job(job) => live.jobs.queue.push_back(job),
            Msg::JobDone(id, result) => {
                live.jobs.running = None;
                self.report(lease, &id, &result, log)?;
            }
            Msg::Stop(stop) => return Err(Halt::Stopped(stop)),
        }
        Ok(())
    }

    /// Posts the output so far. A network failure keeps it for the next post; a refusal drops it, said in
    /// the log.
    fn flush(&self, outbox: &mut Outbox, log: &mut dyn Write) -> Result<(), Halt> {
        outbox.seal();
        match self.post(outbox, None, &[]) {
            Ok(None) | Err(CallError::Network(_)) => {}
            Ok(Some(stop)) => return Err(Halt::Stopped(stop)),
            Err(e) => {
                let why = halting(e)?;
                let _ = writeln!(log, "sky runner: the server refused some output, dropped: {why}");
                outbox.unsent.clear();
            }
        }
        Ok(())
    }

    /// Renews the lease; when the next renewal is due (sooner after a failed one). A lease not renewed for
    /// as long as it lasts is lost.
    fn beat(
        &self,
        lease: &str,
        last_renewal: &mut Instant,
        now: Instant,
        log: &mut dyn Write,
    ) -> Result<Instant, Halt> {
        match self.client.heartbeat(lease) {
            Ok(stop) => {
                *last_renewal = now;
                match stop {
                    Some(stop) => Err(Halt::Stopped(stop)),
                    None => Ok(now + self.timing.heartbeat),
                }
            }
            Err(e) => {
                let e = halting(e)?;
                if last_renewal.elapsed() >= self.timing.lease {
                    let why = format!("the lease could not be renewed for {} s ({e})", self.timing.lease.as_secs());
                    return Err(Halt::Lost(why));
                }
                let _ = writeln!(log, "sky runner: renewing the lease failed ({e}); trying again");
                Ok(now + Duration::from_secs(2).min(self.timing.heartbeat))
            }
        }
    }

    /// Once the command has exited: no more jobs (the poller stops; a `run` job still going is ended and
    /// its result still reported; queued jobs are left unanswered), the session's conversation and grants
    /// kept for its next turn here, and the rest of its output read from the pipes and posted.
    pub(super) fn wind_down(&self, turn: &Turn, live: &mut Live, log: &mut dyn Write) -> Result<(), Ended> {
        live.jobs.close();
        if let Some(c) = live.plan.mapper.as_ref().and_then(|m| m.conversation()) {
            self.conversations.lock().expect("not poisoned").insert(turn.session_id.clone(), c);
        }
        if let Ok(known) = std::fs::read_to_string(live.dir.meta.join("grants.json")) {
            self.grants.lock().expect("not poisoned").insert(turn.session_id.clone(), known);
        }
        // The command is done; its output may still be in the pipes (the supervisor has ended any process
        // of its group that kept them open).
        drop(live.running.lifeline.take());
        let drain_until = Instant::now() + Duration::from_secs(3);
        let job_until = Instant::now() + self.timing.stop_grace.max(Duration::from_secs(3)) + Duration::from_secs(5);
        while live.open_streams > 0 || live.jobs.running.is_some() {
            let until = if live.open_streams > 0 { drain_until } else { job_until };
            match live.rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
                Ok(Msg::Line(s, l)) => take_line(&mut live.outbox, &mut live.plan, s, &l),
                Ok(Msg::Closed) => live.open_streams -= 1,
                Ok(Msg::JobDone(id, result)) => {
                    live.jobs.running = None;
                    if let Err(h) = self.report(&turn.lease_id, &id, &result, log) {
                        return Err(h.into_result());
                    }
                }
                Ok(Msg::Job(_) | Msg::Stop(_)) => {}
                Err(_) if live.open_streams > 0 => live.open_streams = 0,
                Err(_) => break,
            }
        }
        live.outbox.seal();
        match self.retrying(|| self.post(&mut live.outbox, None, &[])) {
            Ok(None) => Ok(()),
            Ok(Some(stop)) => Err(Ok(Halt::Stopped(stop).outcome())),
            Err(e) => Err(self.gave_up(turn, &mut live.outbox, e, "posting the output")),
        }
    }
}

/// A `grant_forget` job (or an older server's `ssh_forget`): every granted command running under the
/// grant is ended, and for an ssh grant the turn's ssh-agent with every key it held (the next ssh loads
/// what is still granted). Its result.
fn forget(live: &mut Live, job: &Job) -> Value {
    #[cfg(unix)]
    let ended = match (&live.channel, &job.spec.grant_id) {
        (Some(c), Some(g)) => c.forget(g),
        _ => 0,
    };
    #[cfg(not(unix))]
    let ended = 0;
    let agent = (job.kind == JobKind::SshForget || job.spec.ssh == Some(true)) && live.jobs.forget_agent();
    to_value(&ForgetResult { ok: true, commands_ended: ended, agent_ended: agent })
}
