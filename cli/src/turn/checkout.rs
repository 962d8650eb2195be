//! A checkout: a session's checks, given to any runner of the workspace when the session's own runner is
//! gone (`land` never lands unchecked). The runner fetches the session's lane into a fresh owner-only
//! folder under the checkout's lease (`GET /v1/runner/files`), runs the command there under a supervisor
//! (with the runner's environment, [`SCRUBBED_ENV`] removed), renews the lease while it runs, and posts
//! `{exit_code, timed_out, output}` as the job's result. The folder is removed afterwards.

use super::command::{collect, tail_text, wait_for, Ran, OUTPUT_TAIL_BYTES, OUTPUT_TAIL_CHARS, RUN_TIMEOUT_S};
use super::{safe_relative, TurnDir, TurnRunner, SCRUBBED_ENV};
use crate::runner_client::{CallError, Checkout, RunResult};
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

impl TurnRunner {
    /// Runs a checkout to its end; `Err` only when its result could not be posted.
    pub fn run_checkout(&self, c: &Checkout, log: &mut dyn Write) -> std::result::Result<(), CallError> {
        let _ = writeln!(
            log,
            "sky runner: running checks `{}` for session {} in a fresh checkout",
            c.command, c.session_id
        );
        let result = self.checkout_result(c).result();
        let _ = writeln!(log, "sky runner: checks for session {}: {}", c.session_id, describe(&result));
        let result = agentsky_wire::runner::to_value(&result);
        self.retrying(|| self.client.job_result(&c.lease_id, &c.job_id, &result))
    }

    fn checkout_result(&self, c: &Checkout) -> Ran {
        let dir = match TurnDir::create(&self.scratch) {
            Ok(d) => d,
            Err(e) => return Ran::failed(format!("cannot make a folder for the checkout: {e}")),
        };
        let files = match self.retrying(|| self.client.files(&c.lease_id)) {
            Ok(f) => f,
            Err(e) => return Ran::failed(format!("cannot fetch the lane's files: {e}")),
        };
        for (path, content) in files {
            let Some(rel) = safe_relative(&path) else { continue };
            let to = dir.work.join(rel);
            let written =
                to.parent().map_or(Ok(()), std::fs::create_dir_all).and_then(|()| std::fs::write(&to, content));
            if let Err(e) = written {
                return Ran::failed(format!("cannot write {path}: {e}"));
            }
        }
        let timeout = Duration::from_secs(c.timeout_s.unwrap_or(RUN_TIMEOUT_S));
        let mut cmd = if cfg!(unix) {
            let mut cmd = Command::new(&self.sky_exe);
            cmd.args(["__supervise", "/dev/null", "sh", "-c"]).arg(format!("exec 2>&1\n{}", c.command));
            cmd.stdin(Stdio::piped());
            cmd
        } else {
            let argv = crate::command_line::shell_command(&c.command);
            let mut cmd = Command::new(&argv[0]);
            cmd.args(&argv[1..]).stdin(Stdio::null());
            cmd
        };
        cmd.current_dir(&dir.work).stdout(Stdio::piped()).stderr(Stdio::piped());
        for name in SCRUBBED_ENV {
            cmd.env_remove(name);
        }
        if let Some(path) = &self.path {
            cmd.env("PATH", path);
        }
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => return Ran::failed(format!("cannot run the command: {e}")),
        };
        let lifeline = child.stdin.take();
        let output: Arc<Mutex<Vec<u8>>> = Arc::default();
        let (open, closed) = mpsc::channel::<()>();
        if let Some(out) = child.stdout.take() {
            collect(out, output.clone(), open.clone());
        }
        if let Some(err) = child.stderr.take() {
            collect(err, output.clone(), open);
        }
        let cancel = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let (flag, grace) = (cancel.clone(), self.timing.stop_grace);
        std::thread::spawn(move || {
            let _ = tx.send(wait_for(child, lifeline, timeout, &flag, grace));
        });
        let mut renewed = Instant::now();
        let (status, timed_out, ended) = loop {
            match rx.recv_timeout(Duration::from_secs(1)) {
                Ok(done) => break done,
                Err(mpsc::RecvTimeoutError::Disconnected) => break (None, false, true),
                Err(mpsc::RecvTimeoutError::Timeout) if renewed.elapsed() >= self.timing.heartbeat => {
                    // A lost lease means another runner has the checkout: stop this one.
                    if let Err(CallError::LeaseLost(_) | CallError::Unauthorized(_)) =
                        self.client.heartbeat(&c.lease_id)
                    {
                        cancel.store(true, std::sync::atomic::Ordering::SeqCst);
                    }
                    renewed = Instant::now();
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
        };
        let until = Instant::now() + Duration::from_secs(2);
        while closed.recv_timeout(until.saturating_duration_since(Instant::now())).is_ok() {}
        let bytes = output.lock().unwrap_or_else(|e| e.into_inner()).clone();
        // What the runner holds that the command could print: its own token and the checkout's lease.
        let known = [self.client.token().to_owned(), c.lease_id.clone()];
        Ran {
            exit_code: status.filter(|_| !ended).map(|s| super::exit_code(&s)),
            timed_out,
            output: tail_text(&bytes, &known, OUTPUT_TAIL_CHARS, OUTPUT_TAIL_BYTES),
            error: (ended && !timed_out).then(|| "ended: the checkout's lease was lost".to_owned()),
        }
    }
}

fn describe(result: &RunResult) -> String {
    match (result.exit_code, result.timed_out, result.error.as_deref()) {
        (Some(code), _, _) => format!("exited {code}"),
        (None, true, _) => "timed out".into(),
        (None, false, Some(why)) => format!("did not finish ({why})"),
        _ => "did not finish".into(),
    }
}
