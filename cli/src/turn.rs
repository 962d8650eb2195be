//! One turn of a `runner` agent, run by `sky runner` (whose claim loop, `runner.rs`, sits above this).
//!
//! - **Folder.** A fresh owner-only folder under the temp dir: `work/` holds the task's files as the
//!   session sees them (`GET /v1/runner/files`) and is the command's working directory; `meta/` beside it
//!   holds what the runner gives the agent (the message, the history as JSON, the instructions, an MCP
//!   config, the shim directory). The whole folder is removed when the turn ends.
//! - **Command.** Run in `work/` with this environment: `AGENTSKY_SESSION_ID`, `AGENTSKY_SESSION_TOKEN`
//!   (the session server's bearer: it goes nowhere else), `AGENTSKY_SERVER` (the server's base URL) and
//!   `AGENTSKY_SESSION_SERVER` (its `/v1/session/mcp`), `AGENTSKY_TASK_ID`, `AGENTSKY_MESSAGE_ID`,
//!   `AGENTSKY_MESSAGE` (the turn's message; left out above 100 KB, the file always has it),
//!   `AGENTSKY_MESSAGE_FILE`, `AGENTSKY_HISTORY_FILE` (`[{role, text}]`, this message last),
//!   `AGENTSKY_INSTRUCTIONS_FILE`, `AGENTSKY_AGENT_NAME`, `AGENTSKY_MODEL`, `AGENTSKY_ATTEMPT`,
//!   `AGENTSKY_MCP_CONFIG` (a Claude Code style `{"mcpServers": {"agentsky": …, "agentsky_help": …}}`
//!   file: `agentsky` starts `sky mcp`, so coding agents find the eleven session tools, and
//!   `agentsky_help` is the Help Center's server, also in `AGENTSKY_HELP_SERVER`), `AGENTSKY_SHIM_DIR`, first on `PATH`
//!   (the provider CLI shims of [`crate::shim`]), `AGENTSKY_GRANTS_FILE` (the grant ids the shims and
//!   `sky mcp` remember; the runner hands them to the session's next turn it runs), and
//!   `AGENTSKY_RUNNER_SOCKET` (the turn's granted-command channel, through which the shims have the
//!   runner run the real CLIs: see [`granted`]; only where the runner cannot ask the kernel who calls,
//!   off Linux, `AGENTSKY_RUNNER_SECRET` too). Its stdin is the message. Removed from the runner's environment ([`SCRUBBED_ENV`]): the runner's `AGENTSKY_API_KEY`
//!   and `AGENTSKY_URL`, and provider credentials (`VERCEL_TOKEN`, `GH_TOKEN`, `AWS_*` keys,
//!   `SSH_AUTH_SOCK`, …): the agent gets those only through grants. (Logins in the runner user's home —
//!   `~/.aws`, gh's config — stay readable to the agent: run runners as a user without them.)
//! - **Output.** Stdout lines become `agent_message` events and stderr lines `status` events: every
//!   second, consecutive lines of one stream are joined into one event (so a reply printed at once is one
//!   message, and the last message is the reply `collect_result` shows). Each event's key is
//!   `<lease_id>-<n>`; a post that fails on the network is sent again with the same keys, so nothing is
//!   shown twice. Both session and runner tokens are masked in anything posted, and the server's
//!   redaction rule ([`crate::redaction`]) replaces any other secret a line shows (`TOKEN=…`, `ghp_…`).
//! - **Lease.** Renewed every 10 s. `stop: true` (the session was stopped, or with `reason: "cancelled"`
//!   only this turn was; a heartbeat, the job poll or an event post says it), a 409 (the lease was lost)
//!   or 30 s without a renewal end the command: SIGTERM to its process group, SIGKILL 3 s later, and the
//!   runner logs how the turn ended. Nothing is uploaded then: the turn is over (the server already ended
//!   it, `cancelled` for a cancel), or another runner has it.
//! - **Supervisor.** On Unix the command runs under `sky __supervise`, in its own process group, whose
//!   stdin is a pipe from the runner: when that pipe closes — the runner ends the turn, or the runner
//!   itself dies, even by SIGKILL — the supervisor ends the command's whole process group. So an agent
//!   never outlives its runner, and a turn re-claimed elsewhere is not also still running here.
//! - **Files.** When the command exits, every text file in `work/` that differs from what was downloaded
//!   (or last synced by a `sync` job) is written back (`PUT /v1/runner/files`, into the session's lane
//!   when the task has lanes). Skipped, and said so in a `status` event: `.git`, `node_modules`, `.venv`
//!   and `__pycache__` folders, symlinks, files that are not UTF-8 text or are over 256 KiB, and anything
//!   past 500 files. Downloaded files the agent deleted are deleted from the folder too
//!   (`DELETE /v1/runner/files?lease_id=&path=`: in the lane until `land`); the status event names the
//!   ones the server really deleted. Only files the runner wrote to disk count, never one under a skipped
//!   folder, a symlink, a company skill, or one of two paths that differ only in case.
//! - **Jobs.** While the command runs, a thread long-polls `POST /v1/runner/jobs {lease_id,
//!   wait_seconds: 20, seen}` (`seen`: the ids of the jobs it already passed on, the last 100) and passes
//!   new ones to the turn's loop, which handles them one at a time in arrival order and answers each with
//!   `POST /v1/runner/jobs/result {lease_id, job_id, result}` (network failures retried like other
//!   posts). A 404 (an older server) ends polling for the turn; `stop: true` ends the command as a stop.
//!   Polling ends when the command exits (a poll under way finishes in the background, unheeded): jobs
//!   still queued then are left unanswered, and a `run` job still going is ended and answered with an
//!   `error`.
//!   - `sync` uploads what changed in `work/` now, deletes what the agent deleted, as the end-of-turn
//!     upload does (same skips; the lease renewed during a long upload), and makes that the baseline, so the
//!     end does not send it again. Then, from `GET /v1/runner/files`, it writes in every file whose server
//!     text differs and that the agent has not changed since its baseline — the same text, or absent from
//!     both (a new server file arrives; one the agent deleted stays deleted) — removes every baseline file
//!     the server no longer has that the agent left as it was (a delete `land` merged from the base; never
//!     the turn's company skills), and
//!     makes that the baseline. → `{ok: true, uploaded, deleted, refreshed, removed, skipped}`, or
//!     `{ok: false, error}`.
//!   - `run` runs `sh -c <command>` in `work/` with the command's environment, under a supervisor of its
//!     own, stdin empty, stdout and stderr in one pipe, on a thread of its own (the loop keeps posting
//!     output and renewing the lease). Past `timeout_s` (600 by default) its process group is ended
//!     (SIGTERM, SIGKILL 3 s later). → `{exit_code, timed_out, output}`: `exit_code` is null when it was
//!     ended; `output` is the last 8000 characters (at most 16 000 bytes), tokens masked.
//!   - `ssh_agent` starts the turn's own ssh-agent on first need (`ssh-agent -D -a <meta>/ssh/agent.sock`,
//!     the folder owner-only) under a supervisor — so it is in none of the agent's process groups and
//!     dies with the runner too — and loads the key from `POST /v1/runner/ssh-key {lease_id, job_id}`
//!     with `ssh-add [-t <ttl_s>] -`: on its stdin, never on disk or in a log. → `{socket_path}` or
//!     `{error}`. The agent is ended and its folder removed when the turn ends, however it ends. The ssh
//!     shim of [`crate::shim`] hands that socket (which `get_credential` answers) to `ssh`.
//!   - `push` (from `land`, when the task has a git remote) pushes the task's base to the remote with the
//!     grant's token, on a thread of its own ([`push`]). → `{ok: true, head}` or `{ok: false, error}`.
//!   - `grant_forget {grant_id, ssh}` (a revoked grant), handled as soon as it arrives, ahead of queued
//!     jobs: every granted command running under that grant is ended, and for an ssh grant the turn's
//!     ssh-agent ends with every key it held (the next `ssh_agent` job starts a new one). `ssh_forget`,
//!     from older servers, ends the ssh-agent. → `{ok: true, commands_ended, agent_ended}`.
//! - **Granted commands.** A Unix socket in an owner-only folder of its own under the runner's temp dir
//!   (outside the turn's folder), served while the turn lasts: a shim's request (on Linux, from a process
//!   the kernel says is this runner's `sky`, its user and its descendant) has the runner fetch the grant's
//!   credential (`POST /v1/runner/credential`), run the real CLI from the runner's own `PATH` with it,
//!   stream the output back, and report the exit status it saw (`POST /v1/runner/commands`), the only
//!   deploy proof. Commands still going when the turn ends, when their grant is revoked or when it
//!   expires are ended.
//! - **Criteria.** When the command has exited on its own (not after a stop or a lost lease) and the files
//!   are uploaded, `GET /v1/runner/criteria` (404: none) names the command criteria of the session's
//!   standing goal. Each runs like a `run` job (600 s), one after another, the lease renewed meanwhile; a
//!   status event names them and their exit codes, and the final post carries them as `checks: [{command,
//!   exit_code, timed_out, output}]`. They do not change how the turn ends.
//! - **End.** Exit 0 → `done: completed`. Otherwise an `error` event with the exit status, then
//!   `done: failed`.

mod changes;
mod checkout;
mod command;
mod folder;
#[cfg(unix)]
mod granted;
mod jobs;
mod live;
mod outbox;
mod push;
pub use push::PUSH_ROOTS_VAR;
mod refresh;
mod skills;
mod ssh_agent;
mod supervise;

pub use changes::{changes, safe_relative, Baseline, Changes, MAX_FILE_BYTES, MAX_UPLOADS, SKIPPED_DIRS};
pub use folder::TurnDir;
use outbox::POST_MAX_EVENTS;
pub use outbox::{Outbox, Stream, EVENT_TEXT_MAX};
use supervise::exit_code;
pub use supervise::{describe_exit, supervise};

use crate::harness::{self, Harness};
use crate::runner_client::{CallError, Check, Client, Done, EventType, Job, JobKind, Stop, Turn};
use crate::{Error, Result};
use agentsky_wire::argv::show as show_command;
use agentsky_wire::runner::{to_value, Refusal};
use jobs::Jobs;
use live::Live;
use serde_json::{json, Value};
use std::ffi::{OsStr, OsString};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The runner's clocks.
#[derive(Debug, Clone)]
pub struct Timing {
    /// How long a claim waits for a turn (the server allows 25 s).
    pub claim_wait_s: u64,
    /// How often the lease is renewed (it lasts 30 s).
    pub heartbeat: Duration,
    /// How often output is posted.
    pub flush: Duration,
    /// How long a lease lasts without renewal: past it, the turn is given up.
    pub lease: Duration,
    /// Between SIGTERM and SIGKILL when a command is stopped.
    pub stop_grace: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Self {
            claim_wait_s: 25,
            heartbeat: Duration::from_secs(10),
            flush: Duration::from_secs(1),
            lease: Duration::from_secs(30),
            stop_grace: Duration::from_secs(3),
        }
    }
}

/// How a turn ended, for the runner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The command exited 0 and the turn was reported `completed`.
    Completed,
    /// Reported `failed`, with why.
    Failed(String),
    /// The session was stopped; the command was ended.
    Stopped,
    /// Only the turn was cancelled; the command was ended and the session takes its next message.
    Cancelled,
    /// The lease was lost (expired, or another runner has the turn); the command was ended.
    LeaseLost(String),
}

impl Outcome {
    pub fn describe(&self) -> String {
        match self {
            Outcome::Completed => "completed".into(),
            Outcome::Failed(why) => format!("failed: {why}"),
            Outcome::Stopped => "stopped: the session was stopped, so the command was ended".into(),
            Outcome::Cancelled => "cancelled: the turn was cancelled, so the command was ended".into(),
            Outcome::LeaseLost(why) => format!("given up: {why}; the command was ended"),
        }
    }
}

/// The runner's own variables the command never sees: its key, and provider credentials, which an agent
/// gets only through grants (the shims).
pub const SCRUBBED_ENV: &[&str] = &[
    "AGENTSKY_API_KEY",
    "AGENTSKY_URL",
    "VERCEL_TOKEN",
    "GH_TOKEN",
    "GITHUB_TOKEN",
    "GH_ENTERPRISE_TOKEN",
    "GITHUB_ENTERPRISE_TOKEN",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "CLOUDSDK_AUTH_ACCESS_TOKEN",
    "CLOUDSDK_AUTH_CREDENTIAL_FILE_OVERRIDE",
    "SUPABASE_ACCESS_TOKEN",
    "SUPABASE_DB_PASSWORD",
    "SSH_AUTH_SOCK",
];
/// `AGENTSKY_MESSAGE` is left out above this (the file always has the message).
const MESSAGE_ENV_MAX: usize = 100_000;

/// `https://x/v1/session/mcp` → `https://x`.
pub fn server_base(session_server: &str) -> String {
    let s = session_server.trim().trim_end_matches('/');
    crate::api::normalize_server(s.strip_suffix("/v1/session/mcp").unwrap_or(s))
}

/// What the turn's loop hears from its threads.
enum Msg {
    /// A line of the command's output.
    Line(Stream, String),
    /// One of the command's output streams ended.
    Closed,
    /// A job from the poller.
    Job(Job),
    /// A `run` job ended: its id and result.
    JobDone(String, Value),
    /// The poller heard that the command must end.
    Stop(Stop),
}

/// Why a turn ends before its command is done with.
enum Halt {
    /// The session was stopped, or the turn cancelled.
    Stopped(Stop),
    /// The lease is lost: another runner may have the turn.
    Lost(String),
    /// The runner's token was refused: that ends the runner too.
    TokenRefused(String),
}

impl Halt {
    fn outcome(&self) -> Outcome {
        match self {
            Halt::Stopped(Stop::Session) => Outcome::Stopped,
            Halt::Stopped(Stop::TurnCancelled) => Outcome::Cancelled,
            Halt::Lost(why) | Halt::TokenRefused(why) => Outcome::LeaseLost(why.clone()),
        }
    }

    /// What `run_turn` returns for it.
    fn into_result(self) -> Result<Outcome> {
        match self {
            Halt::TokenRefused(why) => Err(Error::new(format!("the server refused this runner's token: {why}"))),
            other => Ok(other.outcome()),
        }
    }
}

/// How a step that ended the turn early left it: the outcome, or the error that ends the runner too.
type Ended = Result<Outcome>;

/// What an upload wrote (`(path, content)`), what it deleted, and what the server refused (`(path, why)`).
#[derive(Default)]
struct Uploaded {
    written: Vec<(String, String)>,
    deleted: Vec<String>,
    refused: Vec<(String, String)>,
}

/// Why an upload stopped: the turn is over, or a file could not be written (named).
enum UploadStop {
    Halt(Halt),
    Failed(String, CallError),
}

/// A failed call: `Err` when it ends the turn (a lost lease, a refused token); else the failure back.
fn halting(e: CallError) -> std::result::Result<CallError, Halt> {
    match e {
        CallError::LeaseLost(why) => Err(Halt::Lost(why)),
        CallError::Unauthorized(why) => Err(Halt::TokenRefused(why)),
        other => Ok(other),
    }
}

/// A line of the command's output into the outbox: a coding agent CLI's stdout through its stream's
/// reader as typed events, anything else as a line.
/// The Help Center's MCP server for a turn: the claim's, or the session server's origin's.
fn help_server(turn: &Turn) -> String {
    turn.help_server.clone().unwrap_or_else(|| format!("{}/v1/help/mcp", server_base(&turn.session_server)))
}

fn take_line(outbox: &mut Outbox, plan: &mut Plan, stream: Stream, line: &str) {
    match (&mut plan.mapper, stream) {
        (Some(mapper), Stream::Stdout) => {
            for m in mapper.line(line) {
                if let Some(u) = m.usage() {
                    outbox.usage = Some(u.body());
                }
                if let Some((kind, body)) = m.event() {
                    outbox.typed(kind, body);
                }
            }
        }
        _ => outbox.push(stream, line),
    }
}

fn read_lines(stream: Stream, from: impl Read + Send + 'static, tx: mpsc::Sender<Msg>) {
    std::thread::spawn(move || {
        let mut r = BufReader::new(from);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            // A line longer than this is passed on in pieces.
            match (&mut r).take(EVENT_TEXT_MAX as u64).read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if tx.send(Msg::Line(stream, String::from_utf8_lossy(&buf).into_owned())).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = tx.send(Msg::Closed);
    });
}

/// Runs turns: the protocol client, the command, and where things go.
pub struct TurnRunner {
    pub client: Client,
    /// The agent's command (argv).
    pub command: Vec<String>,
    /// This `sky`: runs the supervisor, `sky mcp` and the shims.
    pub sky_exe: PathBuf,
    /// `PATH` for the command (the shim directory goes first).
    pub path: Option<OsString>,
    /// Where turn folders are made.
    pub scratch: PathBuf,
    /// The folders under which a task's local git remote may be pushed to (`--push-root`).
    pub push_roots: Vec<PathBuf>,
    pub timing: Timing,
    /// Each session's grants file (grant ids only) from its last turn here, handed to its next turn.
    pub grants: std::sync::Mutex<std::collections::HashMap<String, String>>,
    /// Each session's coding agent conversation (Claude Code's session id, Codex's thread id) from its last
    /// turn here: the next turn continues it.
    pub conversations: std::sync::Mutex<std::collections::HashMap<String, harness::Conversation>>,
}

/// What runs this turn: the command, its extra environment, the file its stdin reads, and the reader of a
/// coding agent CLI's stream (none for a plain command, whose lines are shown as they are).
struct Plan {
    argv: Vec<String>,
    env: Vec<(String, OsString)>,
    stdin: PathBuf,
    mapper: Option<Box<dyn harness::Mapper>>,
}

/// The running command and what the loop knows about it.
struct Running {
    child: Child,
    /// The supervisor's lifeline: dropping it ends the command's process group.
    lifeline: Option<std::process::ChildStdin>,
}

impl TurnRunner {
    /// Runs one claimed turn to its end. `Err` only for what ends the runner itself (its token refused).
    pub fn run_turn(&self, turn: &Turn, log: &mut dyn Write) -> Result<Outcome> {
        let say = |log: &mut dyn Write, line: String| {
            let _ = writeln!(log, "sky runner: {line}");
        };
        say(
            log,
            format!(
                "turn {} of session {} (agent {}, attempt {}): claimed",
                turn.message_id,
                turn.session_id,
                turn.agent_name(),
                turn.attempt
            ),
        );
        let outcome = self.turn_inner(turn, log)?;
        say(log, format!("turn {}: {}", turn.message_id, outcome.describe()));
        Ok(outcome)
    }

    fn turn_inner(&self, turn: &Turn, log: &mut dyn Write) -> Result<Outcome> {
        let outbox = Outbox::new(&turn.lease_id, self.secrets(turn));
        let mut live = match self.start(turn, outbox, log) {
            Ok(live) => live,
            Err(ended) => return ended,
        };
        let status = match self.watch(turn, &mut live, log) {
            Ok(status) => status,
            Err(h) => return self.halt(&mut live.running, h),
        };
        if let Err(ended) = self.wind_down(turn, &mut live, log) {
            return ended;
        }
        if let Err(ended) = self.upload_changes(turn, &mut live) {
            return ended;
        }
        let _ = writeln!(log, "sky runner: turn {}: {}", turn.message_id, describe_exit(&status));
        self.conclude(turn, &mut live, &status, log)
    }

    /// Makes the turn's folder (the task's files, the company skills, what the agent reads), plans the
    /// command and starts it, with the turn's job channel and, on Unix, its granted-command channel.
    fn start(&self, turn: &Turn, mut outbox: Outbox, log: &mut dyn Write) -> std::result::Result<Live, Ended> {
        let lease = turn.lease_id.as_str();
        let harness = Harness::of(turn.agent());
        // A CLI keys its saved conversations by the working folder: one session keeps one folder here.
        let made = match harness {
            Harness::Command => TurnDir::create(&self.scratch),
            _ => TurnDir::create_named(&self.scratch, &format!("sky-turn-{}", turn.session_id)),
        };
        let mut dir = match made {
            Ok(d) => d,
            Err(e) => {
                let why = format!("the runner could not make the turn's folder: {e}");
                return Err(self.fail(turn, &mut outbox, &why, &[]));
            }
        };
        let (mut baseline, mut notes) = match self.download(lease, &dir) {
            Ok(downloaded) => downloaded,
            Err(e) => return Err(self.gave_up(turn, &mut outbox, e, "downloading the task's files")),
        };
        notes.extend(skills::install(&self.client, lease, &dir.work, &mut baseline));
        if let Err(e) = self.write_meta(turn, &dir) {
            let why = format!("the runner could not prepare the turn's folder: {e}");
            return Err(self.fail(turn, &mut outbox, &why, &[]));
        }
        let plan = match self.plan(harness, turn, &dir, &mut outbox) {
            Ok(plan) => plan,
            Err(why) => return Err(self.fail(turn, &mut outbox, &why, &[])),
        };
        let _ = writeln!(
            log,
            "sky runner: turn {}: {} file(s) in {}; running `{}`",
            turn.message_id,
            baseline.len(),
            dir.work.display(),
            show_command(&plan.argv)
        );
        // Made after `dir`, so they are dropped before it (here, and in [`Live`]): the turn's granted
        // commands and its ssh-agent end before its folder goes.
        let agent = ssh_agent::TurnAgent::default();
        #[cfg(unix)]
        let channel = match self.open_channel(turn, &dir, &agent) {
            Ok(channel) => {
                dir.granted = channel.env();
                Some(channel)
            }
            Err(e) => {
                notes.push(format!("The provider CLI shims run without the runner (no deploy proof this turn): {e}."));
                None
            }
        };
        let (tx, rx) = mpsc::channel();
        let running = match self.spawn(turn, &dir, &plan, tx.clone()) {
            Ok(r) => r,
            Err(e) => {
                let why = format!("cannot run `{}`: {e}", show_command(&plan.argv));
                return Err(self.fail(turn, &mut outbox, &why, &[]));
            }
        };
        let jobs = Jobs::start(&self.client, lease, tx, agent);
        Ok(Live {
            jobs,
            #[cfg(unix)]
            channel,
            running,
            rx,
            plan,
            outbox,
            baseline,
            notes,
            last_renewal: Instant::now(),
            open_streams: 2,
            dir,
        })
    }

    /// Writes the task's files as the session sees them into `work/`: what the upload compares against,
    /// and notes on the files that could not be written.
    fn download(&self, lease: &str, dir: &TurnDir) -> std::result::Result<(Baseline, Vec<String>), CallError> {
        let files = self.retrying(|| self.client.files(lease))?;
        let mut downloaded = Baseline::default();
        let mut notes = Vec::new();
        for (path, content) in files {
            let written = safe_relative(&path).ok_or_else(|| "an unsafe path".to_owned()).and_then(|rel| {
                let p = dir.work.join(rel);
                p.parent().map(std::fs::create_dir_all).transpose().map_err(|e| e.to_string())?;
                std::fs::write(&p, &content).map_err(|e| e.to_string())
            });
            match written {
                Ok(()) => downloaded.wrote(&path, content),
                Err(why) => {
                    notes.push(format!("{path} was not downloaded ({why})"));
                    downloaded.not_written(&path, content);
                }
            }
        }
        Ok((downloaded, notes))
    }

    /// Uploads what the command changed in `work/` and deletes what it deleted, then says so (and the
    /// turn's other notes) in a status event.
    fn upload_changes(&self, turn: &Turn, live: &mut Live) -> std::result::Result<(), Ended> {
        let mut c = changes(&live.dir.work, &live.baseline);
        let sent = match self.upload(&turn.lease_id, std::mem::take(&mut c.upload), &c.deleted, &mut live.last_renewal)
        {
            Ok(sent) => sent,
            Err(UploadStop::Halt(h)) => return Err(h.into_result()),
            Err(UploadStop::Failed(path, e)) => {
                return Err(self.gave_up(turn, &mut live.outbox, e, &format!("uploading {path}")))
            }
        };
        let uploaded: Vec<String> = sent.written.into_iter().map(|(path, _)| path).collect();
        let mut summary = Vec::new();
        if !uploaded.is_empty() {
            summary.push(format!("Uploaded {}: {}.", plural(uploaded.len(), "file"), uploaded.join(", ")));
        }
        if !c.skipped.is_empty() {
            summary.push(format!("Not uploaded: {}.", c.skipped.join(", ")));
        }
        if !sent.deleted.is_empty() {
            summary.push(format!("Deleted {}: {}.", plural(sent.deleted.len(), "file"), sent.deleted.join(", ")));
        }
        summary.append(&mut live.notes);
        summary.extend(sent.refused.into_iter().map(|(path, why)| format!("{path} was not uploaded ({why})")));
        if !summary.is_empty() {
            live.outbox.text(EventType::Status, summary.join(" "));
        }
        Ok(())
    }

    /// Runs the goal's criteria against what the command left, then ends the turn as the command's exit
    /// says: `completed` for 0, otherwise `failed`.
    fn conclude(&self, turn: &Turn, live: &mut Live, status: &ExitStatus, log: &mut dyn Write) -> Result<Outcome> {
        let checks = match self.run_criteria(turn, &live.dir, &mut live.last_renewal) {
            Ok((checks, said)) => {
                if let Some(text) = said {
                    let _ = writeln!(log, "sky runner: turn {}: {text}", turn.message_id);
                    live.outbox.text(EventType::Status, text);
                }
                checks
            }
            Err(h) => return h.into_result(),
        };
        if status.success() {
            self.finish(turn, &mut live.outbox, &checks)
        } else {
            self.fail(turn, &mut live.outbox, &format!("the agent's command {}", describe_exit(status)), &checks)
        }
    }

    /// The tokens masked in anything posted.
    fn secrets(&self, turn: &Turn) -> Vec<String> {
        vec![turn.session_token.clone(), self.client.token().to_owned()]
    }

    /// Starts the queued jobs in order while no `run` job is going: `sync` and `ssh_agent` here (they are
    /// quick), `run` on a thread of its own that reports through the loop's channel.
    fn next_jobs(
        &self,
        turn: &Turn,
        dir: &TurnDir,
        jobs: &mut Jobs,
        baseline: &mut Baseline,
        last_renewal: &mut Instant,
        log: &mut dyn Write,
    ) -> std::result::Result<(), Halt> {
        let lease = turn.lease_id.as_str();
        while jobs.running.is_none() {
            let Some(job) = jobs.queue.pop_front() else { return Ok(()) };
            let _ = writeln!(log, "sky runner: turn {}: job {} ({})", turn.message_id, job.job_id, job.kind.as_str());
            let result = match &job.kind {
                JobKind::Sync => self.sync(lease, &dir.work, baseline, last_renewal)?,
                JobKind::SshAgent => self.ssh_agent_job(lease, &job, dir, jobs)?,
                JobKind::Push => {
                    self.start_push(turn, &job, jobs);
                    jobs.running = Some(job.job_id);
                    continue;
                }
                JobKind::Run => match self.start_run(turn, dir, &job, jobs) {
                    Ok(()) => {
                        jobs.running = Some(job.job_id);
                        continue;
                    }
                    Err(result) => result,
                },
                other => to_value(&Refusal {
                    ok: false,
                    error: format!("this runner does not know jobs of kind `{}`", other.as_str()),
                }),
            };
            self.report(lease, &job.job_id, &result, log)?;
        }
        Ok(())
    }

    /// Posts a job's result (retried on network failures); a refusal is logged, not fatal.
    fn report(&self, lease: &str, job_id: &str, result: &Value, log: &mut dyn Write) -> std::result::Result<(), Halt> {
        if let Err(e) = self.retrying(|| self.client.job_result(lease, job_id, result)) {
            let e = halting(e)?;
            let _ = writeln!(log, "sky runner: the result of job {job_id} was not taken: {e}");
        }
        Ok(())
    }

    /// Writes `files` into the session's folder in order, then deletes `deleted` from it, renewing the
    /// lease as it goes; a file the server refuses is set aside with why, and anything else stops it.
    fn upload(
        &self,
        lease: &str,
        files: Vec<(String, String)>,
        deleted: &[String],
        last_renewal: &mut Instant,
    ) -> std::result::Result<Uploaded, UploadStop> {
        let mut sent = Uploaded::default();
        for (path, content) in files {
            self.keep_lease(lease, last_renewal).map_err(UploadStop::Halt)?;
            match self.retrying(|| self.client.put_file(lease, &path, &content)) {
                Ok(()) => sent.written.push((path, content)),
                Err(CallError::Refused(why)) => sent.refused.push((path, why)),
                Err(e) => return Err(UploadStop::Failed(path, e)),
            }
        }
        for path in deleted {
            self.keep_lease(lease, last_renewal).map_err(UploadStop::Halt)?;
            match self.retrying(|| self.client.delete_file(lease, path)) {
                Ok(true) => sent.deleted.push(path.clone()),
                // Gone already (a retry, or another write of the lane removed it): not this turn's delete.
                Ok(false) => {}
                Err(CallError::Refused(why)) => sent.refused.push((path.clone(), why)),
                Err(e) => return Err(UploadStop::Failed(path.clone(), e)),
            }
        }
        Ok(sent)
    }

    /// Renews the lease when a renewal is due, for the steps that hold up the loop or come after it.
    fn keep_lease(&self, lease: &str, last_renewal: &mut Instant) -> std::result::Result<(), Halt> {
        if last_renewal.elapsed() < self.timing.heartbeat {
            return Ok(());
        }
        match self.client.heartbeat(lease) {
            Ok(Some(stop)) => Err(Halt::Stopped(stop)),
            Ok(None) => {
                *last_renewal = Instant::now();
                Ok(())
            }
            Err(e) => {
                let e = halting(e)?;
                if last_renewal.elapsed() >= self.timing.lease {
                    return Err(Halt::Lost(format!(
                        "the lease could not be renewed for {} s ({e})",
                        self.timing.lease.as_secs()
                    )));
                }
                Ok(())
            }
        }
    }

    /// Ends the command because of `h`.
    fn halt(&self, running: &mut Running, h: Halt) -> Result<Outcome> {
        self.end(running, h.outcome());
        h.into_result()
    }

    /// Writes what the agent reads besides its environment.
    fn write_meta(&self, turn: &Turn, dir: &TurnDir) -> std::io::Result<()> {
        std::fs::write(dir.meta.join("message.txt"), &turn.message)?;
        std::fs::write(dir.meta.join("history.json"), serde_json::to_string_pretty(&turn.history)? + "\n")?;
        std::fs::write(dir.meta.join("instructions.md"), &turn.agent().instructions)?;
        let mcp = json!({ "mcpServers": {
            "agentsky": {
                "type": "stdio",
                "command": self.sky_exe.to_string_lossy(),
                "args": ["mcp", "--server", server_base(&turn.session_server)],
            },
            "agentsky_help": { "type": "http", "url": help_server(turn) },
        }});
        std::fs::write(dir.meta.join("mcp.json"), serde_json::to_string_pretty(&mcp)? + "\n")?;
        if let Some(known) = self.grants.lock().expect("not poisoned").get(&turn.session_id) {
            crate::files::write_atomic(&dir.meta.join("grants.json"), known, 0o600)?;
        }
        crate::shim::install(&self.sky_exe, &dir.shims)
    }

    /// The command's environment (on top of the runner's, without its key).
    pub fn child_env(&self, turn: &Turn, dir: &TurnDir) -> Vec<(String, OsString)> {
        let meta = |f: &str| dir.meta.join(f).into_os_string();
        let mut env: Vec<(String, OsString)> = vec![
            ("AGENTSKY_SESSION_ID".into(), turn.session_id.clone().into()),
            ("AGENTSKY_SESSION_TOKEN".into(), turn.session_token.clone().into()),
            ("AGENTSKY_SERVER".into(), server_base(&turn.session_server).into()),
            ("AGENTSKY_SESSION_SERVER".into(), turn.session_server.clone().into()),
            ("AGENTSKY_TASK_ID".into(), turn.task_id.clone().into()),
            ("AGENTSKY_MESSAGE_ID".into(), turn.message_id.clone().into()),
            ("AGENTSKY_MESSAGE_FILE".into(), meta("message.txt")),
            ("AGENTSKY_HISTORY_FILE".into(), meta("history.json")),
            ("AGENTSKY_INSTRUCTIONS_FILE".into(), meta("instructions.md")),
            ("AGENTSKY_MCP_CONFIG".into(), meta("mcp.json")),
            ("AGENTSKY_HELP_SERVER".into(), help_server(turn).into()),
            ("AGENTSKY_GRANTS_FILE".into(), meta("grants.json")),
            ("AGENTSKY_AGENT_NAME".into(), turn.agent_name().to_owned().into()),
            ("AGENTSKY_MODEL".into(), turn.agent().model.clone().into()),
            ("AGENTSKY_ATTEMPT".into(), turn.attempt.to_string().into()),
            ("AGENTSKY_SHIM_DIR".into(), dir.shims.clone().into_os_string()),
        ];
        env.extend(dir.granted.iter().cloned());
        if turn.message.len() <= MESSAGE_ENV_MAX {
            env.push(("AGENTSKY_MESSAGE".into(), turn.message.clone().into()));
        }
        let mut paths = vec![dir.shims.clone()];
        if let Some(p) = &self.path {
            paths.extend(std::env::split_paths(p));
        }
        if let Ok(joined) = std::env::join_paths(paths) {
            env.push(("PATH".into(), joined));
        }
        env
    }

    /// Opens the turn's granted-command channel ([`granted`]), whose commands run with the turn's
    /// environment.
    #[cfg(unix)]
    fn open_channel(
        &self,
        turn: &Turn,
        dir: &TurnDir,
        agent: &ssh_agent::TurnAgent,
    ) -> std::io::Result<granted::Channel> {
        let runs = granted::Runs {
            client: self.client.clone(),
            lease: turn.lease_id.clone(),
            sky_exe: self.sky_exe.clone(),
            path: self.path.clone(),
            shims: dir.shims.clone(),
            meta: dir.meta.clone(),
            work: dir.work.clone(),
            env: self.child_env(turn, dir),
            agent: agent.clone(),
            grace: self.timing.stop_grace,
        };
        granted::Channel::open(&self.scratch, runs)
    }

    /// `program` set up to run in `work/` with the agent's environment ([`SCRUBBED_ENV`] removed), in a
    /// process group of its own: a Ctrl-C meant for the runner is not sent to it; the runner's death
    /// reaches it through a supervisor's lifeline instead.
    fn in_turn(&self, program: impl AsRef<OsStr>, turn: &Turn, dir: &TurnDir) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(&dir.work);
        for name in SCRUBBED_ENV {
            cmd.env_remove(name);
        }
        cmd.envs(self.child_env(turn, dir));
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        cmd
    }

    fn spawn(&self, turn: &Turn, dir: &TurnDir, plan: &Plan, tx: mpsc::Sender<Msg>) -> std::io::Result<Running> {
        let Some((program, args)) = plan.argv.split_first() else {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "no command"));
        };
        let mut cmd = if cfg!(unix) {
            let mut c = self.in_turn(&self.sky_exe, turn, dir);
            c.arg("__supervise").arg(&plan.stdin).args(&plan.argv);
            c.stdin(Stdio::piped());
            c
        } else {
            let mut c = self.in_turn(program, turn, dir);
            c.args(args);
            c.stdin(std::fs::File::open(&plan.stdin)?);
            c
        };
        cmd.envs(plan.env.iter().map(|(k, v)| (k, v)));
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn()?;
        let lifeline = child.stdin.take();
        if let Some(out) = child.stdout.take() {
            read_lines(Stream::Stdout, out, tx.clone());
        }
        if let Some(err) = child.stderr.take() {
            read_lines(Stream::Stderr, err, tx);
        }
        Ok(Running { child, lifeline })
    }

    /// What runs the turn: the runner's command for a `runner` agent; for `claude-code` and `codex`, the
    /// CLI from the runner's `PATH` with its per-turn configuration, continuing the session's conversation
    /// from its last turn here, or starting fresh with a summary of the session so far. `Err` says why the
    /// turn cannot run here.
    fn plan(
        &self,
        harness: Harness,
        turn: &Turn,
        dir: &TurnDir,
        outbox: &mut Outbox,
    ) -> std::result::Result<Plan, String> {
        let message = dir.meta.join("message.txt");
        let Some((exe_name, package)) = harness.cli() else {
            // A hosted agent carries its own command (its sandbox's runner has none of its own).
            if let Some(line) = turn.agent().command.as_deref().filter(|l| !l.trim().is_empty()) {
                let argv = crate::command_line::shell_command(line);
                return Ok(Plan { argv, env: vec![], stdin: message, mapper: None });
            }
            if self.command.is_empty() {
                return Err(format!(
                    "agent {} runs a command of yours (harness `runner`), and this runner was started without one: \
                     start it as `sky runner -- <command…>`, or give the agent the harness `claude-code` or `codex`",
                    turn.agent_name()
                ));
            }
            return Ok(Plan { argv: self.command.clone(), env: vec![], stdin: message, mapper: None });
        };
        let exe = harness::find_on_path(exe_name, self.path.as_deref()).ok_or_else(|| {
            format!(
                "`{exe_name}` is not on this runner's PATH: install it (`npm install -g {package}`) on the machine running \
                 `sky runner`, then restart the runner"
            )
        })?;
        let before = self.conversations.lock().expect("not poisoned").get(&turn.session_id).cloned();
        let resume = before.as_ref().map(|c| c.id.clone());
        let mut stdin = message;
        if resume.is_none() {
            if let Some(text) = harness::fresh_start(&turn.history, &turn.message) {
                stdin = dir.meta.join("prompt.txt");
                std::fs::write(&stdin, text).map_err(|e| format!("the runner could not write the prompt: {e}"))?;
                outbox.text(
                    EventType::Status,
                    "This runner has not run this session before: the agent starts a new conversation, given a summary of the session so far.",
                );
            }
        }
        let help_server = help_server(turn);
        let setup = harness::Setup {
            agent: turn.agent(),
            meta: &dir.meta,
            sky_exe: &self.sky_exe,
            server: &server_base(&turn.session_server),
            help_server: &help_server,
            resume: resume.as_deref(),
        };
        let launch = harness::launch(harness, &exe, &setup)
            .map_err(|e| format!("the runner could not configure {exe_name}: {e}"))?;
        Ok(Plan { argv: launch.argv, env: launch.env, stdin, mapper: harness::mapper(harness, before.as_ref()) })
    }

    /// Ends the command (its whole process group on Unix) and returns `outcome`.
    fn end(&self, running: &mut Running, outcome: Outcome) -> Outcome {
        drop(running.lifeline.take());
        if cfg!(unix) {
            // The supervisor sends SIGTERM, then SIGKILL after the grace; give it that long and a bit.
            let deadline = Instant::now() + self.timing.stop_grace + Duration::from_secs(5);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = running.child.try_wait() {
                    return outcome;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        let _ = running.child.kill();
        let _ = running.child.wait();
        outcome
    }

    /// Posts the unsent events (in pieces), the last piece with `done` and the criteria `checks`;
    /// `Some` when the command must end.
    fn post(
        &self,
        outbox: &mut Outbox,
        done: Option<Done>,
        checks: &[Check],
    ) -> std::result::Result<Option<Stop>, CallError> {
        let mut stop = None;
        loop {
            let n = outbox.unsent.len().min(POST_MAX_EVENTS);
            let last = n == outbox.unsent.len();
            if n == 0 && done.is_none() && outbox.usage.is_none() {
                return Ok(stop);
            }
            let (done, checks) = match done {
                Some(d) if last => (Some(d), checks),
                _ => (None, &[][..]),
            };
            let usage = outbox.usage.as_ref();
            stop = stop.or(self.client.events(&outbox.lease_id, &outbox.unsent[..n], done, checks, usage)?);
            outbox.unsent.drain(..n);
            outbox.usage = None;
            if last {
                return Ok(stop);
            }
        }
    }

    /// Retries network failures (same request, same keys) while the lease may still hold.
    fn retrying<T>(
        &self,
        mut f: impl FnMut() -> std::result::Result<T, CallError>,
    ) -> std::result::Result<T, CallError> {
        let started = Instant::now();
        let mut pause = Duration::from_millis(500);
        loop {
            match f() {
                Err(CallError::Network(_)) if started.elapsed() + pause < self.timing.lease => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_secs(5));
                }
                other => return other,
            }
        }
    }

    /// Ends the turn as `completed` with the events still unsent (and the criteria `checks`).
    fn finish(&self, turn: &Turn, outbox: &mut Outbox, checks: &[Check]) -> Result<Outcome> {
        match self.retrying(|| self.post(outbox, Some(Done::Completed), checks)) {
            Ok(_) => Ok(Outcome::Completed),
            Err(e) => self.gave_up(turn, outbox, e, "ending the turn"),
        }
    }

    /// Reports the turn failed, with an `error` event saying why (and the criteria `checks`).
    fn fail(&self, _turn: &Turn, outbox: &mut Outbox, why: &str, checks: &[Check]) -> Result<Outcome> {
        outbox.error(why);
        match self.retrying(|| self.post(outbox, Some(Done::Failed), checks)) {
            Ok(_) => Ok(Outcome::Failed(why.to_owned())),
            Err(CallError::LeaseLost(w)) => Ok(Outcome::LeaseLost(w)),
            Err(CallError::Unauthorized(w)) => Err(Error::new(format!("the server refused this runner's token: {w}"))),
            Err(e) => Ok(Outcome::LeaseLost(format!(
                "reporting the failure failed ({e}); the turn is left for another runner once its lease runs out"
            ))),
        }
    }

    /// What a failed call means for the turn: a refusal fails it; a lost lease or an unreachable server
    /// leaves it (another runner claims it once the lease runs out).
    fn gave_up(&self, turn: &Turn, outbox: &mut Outbox, e: CallError, what: &str) -> Result<Outcome> {
        match e {
            CallError::LeaseLost(why) => Ok(Outcome::LeaseLost(why)),
            CallError::Unauthorized(why) => Err(Error::new(format!("the server refused this runner's token: {why}"))),
            CallError::Refused(why) => self.fail(turn, outbox, &format!("{what} failed: {why}"), &[]),
            CallError::Network(why) => Ok(Outcome::LeaseLost(format!(
                "{what} failed ({why}); the turn is left for another runner once its lease runs out"
            ))),
        }
    }
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_base_comes_from_the_session_server() {
        assert_eq!(server_base("https://api.x.dev/v1/session/mcp"), "https://api.x.dev");
        assert_eq!(server_base("http://127.0.0.1:8787/v1/session/mcp/"), "http://127.0.0.1:8787");
    }
}
