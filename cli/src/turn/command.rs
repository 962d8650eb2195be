//! A command run for a `run` job or a criterion: its output collected (the tail kept, tokens masked),
//! waited for up to a time limit, and what it ended with.

use crate::runner_client::{Check, RunResult};
use serde_json::Value;
use std::io::Read;
use std::process::{Child, ChildStdin, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// A `run` job's time limit when it names none, and each criteria command's.
pub const RUN_TIMEOUT_S: u64 = 600;
/// How much of a command's output its result carries: the last 8000 characters, and no more than the
/// server takes of a check's output (16 KiB).
pub const OUTPUT_TAIL_CHARS: usize = 8000;
pub const OUTPUT_TAIL_BYTES: usize = 16_000;
/// The output kept while a command runs: enough more than the tail that masking a token never meets
/// the cut (a buffer of nothing but tokens still masks to well over the tail).
const OUTPUT_KEEP_BYTES: usize = 64 * 1024;

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
    pub(super) fn failed(why: String) -> Self {
        Self { exit_code: None, timed_out: false, output: String::new(), error: Some(why) }
    }

    /// A `run` job's or a checkout's result.
    pub fn result(&self) -> RunResult {
        RunResult {
            exit_code: self.exit_code.map(i64::from),
            timed_out: self.timed_out,
            output: self.output.clone(),
            error: self.error.clone(),
        }
    }

    /// As the job's result is posted.
    pub fn to_json(&self) -> Value {
        agentsky_wire::runner::to_value(&self.result())
    }

    /// A criterion's check, as the final post carries it.
    pub fn check(self, command: String) -> Check {
        Check { command, exit_code: self.exit_code.map(i64::from), timed_out: self.timed_out, output: self.output }
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
pub(super) fn collect(mut from: impl Read + Send + 'static, into: Arc<Mutex<Vec<u8>>>, open: mpsc::Sender<()>) {
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
}
