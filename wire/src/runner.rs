//! The runner protocol (`/v1/runner/*`) as types: every request a `sky runner` sends and every answer the
//! server gives, the jobs the server hands a turn's runner and what the runner answers them with. The
//! server (`src/runner/`) and the CLI (`cli/src/runner_client.rs`) both build and read these, so a field
//! renamed on one side fails to compile on the other instead of going missing on the wire.
//!
//! The field names are the protocol's: runners already out there send and read exactly these. Answers
//! are read leniently (a field an older server leaves out has a default, an unknown one is ignored);
//! requests are read strictly by the server (an unknown field is refused), with the limits it enforces
//! written where they apply.

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The routes, as the server matches them and the CLI calls them.
pub mod route {
    pub const CLAIM: &str = "/v1/runner/claim";
    pub const HEARTBEAT: &str = "/v1/runner/heartbeat";
    pub const EVENTS: &str = "/v1/runner/events";
    /// `GET ?lease_id=`, `PUT` with [`super::WriteFile`], `DELETE ?lease_id=&path=`.
    pub const FILES: &str = "/v1/runner/files";
    /// `GET ?lease_id=`.
    pub const SKILLS: &str = "/v1/runner/skills";
    pub const JOBS: &str = "/v1/runner/jobs";
    pub const JOB_RESULT: &str = "/v1/runner/jobs/result";
    pub const SSH_KEY: &str = "/v1/runner/ssh-key";
    /// `GET ?lease_id=`.
    pub const CRITERIA: &str = "/v1/runner/criteria";
    pub const CREDENTIAL: &str = "/v1/runner/credential";
    pub const COMMANDS: &str = "/v1/runner/commands";
}

/// The longest a claim or a job poll may wait, in seconds.
pub const MAX_WAIT_S: i64 = 25;

/// What a hosted sandbox's runner (`sky runner --hosted`) reads from its environment, which the server
/// starts its container with: the server (the address its sandbox routes to the deployment), its runner
/// token, and the seconds to wait for work before exiting.
pub const HOSTED_VARS: [&str; 3] = ["AGENTSKY_SERVER", "AGENTSKY_RUNNER_TOKEN", "AGENTSKY_IDLE_EXIT_S"];
/// The most events one post carries.
pub const MAX_EVENTS: usize = 500;
/// The most criteria checks one final post carries.
pub const MAX_CHECKS: usize = 20;
/// The most job ids a poll names as already seen.
pub const MAX_SEEN: usize = 100;
/// The most tokens a usage report may name.
pub const MAX_TOKENS: i64 = 1_000_000_000_000;

// ── Limits, checked as a request is read, in the words the server's own number and list rules use. ──

fn capped<'de, D: Deserializer<'de>, T: Deserialize<'de>, const MAX: usize>(d: D) -> Result<Vec<T>, D::Error> {
    let v = Vec::<T>::deserialize(d)?;
    if v.len() > MAX {
        return Err(D::Error::custom(format!("may hold at most {MAX} items (got {})", v.len())));
    }
    Ok(v)
}

fn ranged<const MIN: i64, const MAX: i64>(n: i64) -> Result<i64, String> {
    if (MIN..=MAX).contains(&n) {
        Ok(n)
    } else {
        Err(format!("must be between {MIN} and {MAX} (got {n})"))
    }
}

fn int<'de, D: Deserializer<'de>, const MIN: i64, const MAX: i64>(d: D) -> Result<i64, D::Error> {
    ranged::<MIN, MAX>(i64::deserialize(d)?).map_err(D::Error::custom)
}

fn opt_int<'de, D: Deserializer<'de>, const MIN: i64, const MAX: i64>(d: D) -> Result<Option<i64>, D::Error> {
    Option::<i64>::deserialize(d)?.map(ranged::<MIN, MAX>).transpose().map_err(D::Error::custom)
}

/// A list whose items this side cannot read are left out rather than failing the others (a newer server
/// may send what an older runner does not know).
fn readable<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Vec<T>, D::Error> {
    let items = Option::<Vec<Value>>::deserialize(d)?.unwrap_or_default();
    Ok(items.into_iter().filter_map(|v| serde_json::from_value(v).ok()).collect())
}

// ── Claim ──

/// `POST /v1/runner/claim`: wait up to `wait_seconds` (at most 25) for a turn or a checkout.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_seconds: Option<i64>,
}

/// What a claim answers (204 when nothing waited): a session's checks to run, or a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Claimed {
    Checkout { checkout: Checkout },
    Turn(Box<Assignment>),
}

/// A session's checks for any runner of the workspace: run `command` in a fresh folder holding the files
/// `GET /v1/runner/files` serves for `lease_id`, renew the lease with heartbeats, and post the
/// [`RunResult`] to `POST /v1/runner/jobs/result`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkout {
    pub job_id: String,
    /// `checks`.
    #[serde(default)]
    pub kind: String,
    pub lease_id: String,
    #[serde(default)]
    pub lease_expires_ms: Option<i64>,
    pub session_id: String,
    pub command: String,
    #[serde(default)]
    pub timeout_s: Option<u64>,
}

/// A claimed turn: everything a runner needs to run it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Assignment {
    pub lease_id: String,
    #[serde(default)]
    pub lease_expires_ms: Option<i64>,
    /// 1 for the first runner to claim the turn, more when one before it went away.
    #[serde(default = "first_attempt")]
    pub attempt: i64,
    pub session_id: String,
    #[serde(default)]
    pub task_id: String,
    pub message_id: String,
    /// The turn's message as the agent reads it (a peer's says who sent it).
    #[serde(default)]
    pub message: String,
    /// The session's messages, oldest first, this turn's last.
    #[serde(default)]
    pub history: Vec<HistoryEntry>,
    /// `None` when the agent was deleted.
    #[serde(default)]
    pub agent: Option<AgentView>,
    /// The session token (`sst_…`) the agent inside uses, living as long as the lease.
    pub session_token: String,
    /// `<server>/v1/session/mcp`.
    pub session_server: String,
    /// `<server>/v1/help/mcp` (older servers leave it out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub help_server: Option<String>,
}

fn first_attempt() -> i64 {
    1
}

/// What [`Assignment::agent`] reads as when the agent is gone.
static NO_AGENT: AgentView = AgentView {
    agent_id: String::new(),
    name: None,
    harness: None,
    model: String::new(),
    thinking: String::new(),
    instructions: String::new(),
    tool_approval: None,
    command: None,
};

impl Assignment {
    /// The turn's agent; every field empty when it was deleted.
    pub fn agent(&self) -> &AgentView {
        self.agent.as_ref().unwrap_or(&NO_AGENT)
    }

    /// The agent's name, for output (`?` when there is none).
    pub fn agent_name(&self) -> &str {
        self.agent().name.as_deref().unwrap_or("?")
    }
}

/// One message of a session's history. Its fields are in the order the agent's history file has
/// always shown them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryEntry {
    /// For a peer's message: the session that sent it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_session_id: Option<String>,
    pub role: Role,
    #[serde(default)]
    pub text: String,
}

/// Who said a message of the history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Agent,
    /// Another session (`send_to_session`), not the user.
    Peer,
    /// A role this runner does not know (a newer server's).
    #[serde(other)]
    Other,
}

/// The turn's agent as the session runs it: the session's harness, model and thinking (a session keeps
/// what it started with), the agent's instructions and tool approval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentView {
    #[serde(default)]
    pub agent_id: String,
    #[serde(default)]
    pub name: Option<String>,
    /// `runner`, `claude-code` or `codex`; older servers name none (a `runner` agent).
    #[serde(default)]
    pub harness: Option<String>,
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub thinking: String,
    #[serde(default)]
    pub instructions: String,
    /// `outside_folder` when the server names none.
    #[serde(default)]
    pub tool_approval: Option<String>,
    /// A hosted `runner` agent's shell line, which its sandbox's runner runs in the turn's folder with the
    /// message on stdin; absent for agents on a person's runner (whose command is given to `sky runner`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
}

// ── Lease, heartbeat, stop ──

/// `POST /v1/runner/heartbeat`: renew the lease.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Heartbeat {
    pub lease_id: String,
}

/// Whether the agent's command must end, as a heartbeat, a job poll and an event post answer it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stopping {
    /// The session was stopped, or (with `reason`) only this turn was cancelled.
    #[serde(default)]
    pub stop: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<StopReason>,
}

/// Why only this turn ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// `cancel_turn` or `tasks/cancel`: the session takes its next message.
    Cancelled,
    #[serde(other)]
    Other,
}

impl Stopping {
    /// Go on, or stop when the session was stopped.
    pub fn session(stopped: bool) -> Self {
        Self { stop: stopped, reason: None }
    }

    /// The turn was cancelled.
    pub fn cancelled() -> Self {
        Self { stop: true, reason: Some(StopReason::Cancelled) }
    }
}

/// What a heartbeat answers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HeartbeatAnswer {
    #[serde(default)]
    pub lease_expires_ms: i64,
    #[serde(flatten)]
    pub stopping: Stopping,
}

// ── Events ──

/// `POST /v1/runner/events`: events reported exactly once by their keys; `done` ends the turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PostEvents {
    pub lease_id: String,
    #[serde(deserialize_with = "capped::<_, _, MAX_EVENTS>")]
    pub events: Vec<Event>,
    /// The turn is over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done: Option<Done>,
    /// With `done`: the goal's command criteria as run at the turn's end (`GET /v1/runner/criteria`).
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "capped::<_, _, MAX_CHECKS>")]
    pub checks: Vec<Check>,
    /// What a coding agent CLI reported the turn used so far (the whole turn's, not since the last post).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// How a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Done {
    Completed,
    Failed,
}

/// One event of a turn: its key (unique per event; a retried post sends it again), its type, and the
/// rest of its fields (`text`, `message`, a tool call's `call_id`, `name`, `arguments`, …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub key: String,
    #[serde(rename = "type")]
    pub kind: EventType,
    #[serde(flatten)]
    pub body: Map<String, Value>,
}

/// An event's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventType {
    AgentMessage,
    ToolCall,
    ToolResult,
    Status,
    Error,
}

/// A criterion's command as the runner ran it in the turn's working folder at the turn's end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub command: String,
    /// `None` when it did not exit by itself (killed, timed out).
    pub exit_code: Option<i64>,
    #[serde(default)]
    pub timed_out: bool,
    /// The tail of its output.
    #[serde(default)]
    pub output: String,
}

/// A turn's usage as a coding agent CLI reports it: recorded, not charged, and counted against the
/// session's budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    #[serde(deserialize_with = "int::<_, 0, MAX_TOKENS>")]
    pub input_tokens: i64,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_int::<_, 0, MAX_TOKENS>")]
    pub cached_input_tokens: Option<i64>,
    #[serde(deserialize_with = "int::<_, 0, MAX_TOKENS>")]
    pub output_tokens: i64,
    /// The CLI's own figure, in US dollars, when it gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// What an event post answers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EventsAnswer {
    #[serde(default)]
    pub accepted: usize,
    #[serde(flatten)]
    pub stopping: Stopping,
}

// ── Files and skills ──

/// `GET /v1/runner/files?lease_id=`: the task folder as the session sees it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Files {
    #[serde(default)]
    pub files: Vec<File>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct File {
    pub path: String,
    #[serde(default)]
    pub version: i64,
    pub content: String,
}

/// `PUT /v1/runner/files`: one file written into the session's folder (its lane when the task has lanes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteFile {
    pub lease_id: String,
    pub path: String,
    pub content: String,
}

/// What `DELETE /v1/runner/files?lease_id=&path=` answers: `deleted: false` when it was gone already.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Deleted {
    pub path: String,
    #[serde(default)]
    pub deleted: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i64>,
}

/// `GET /v1/runner/skills?lease_id=`: the workspace's company skills in full.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Skills {
    #[serde(default)]
    pub skills: Vec<Skill>,
}

/// A company skill: its `SKILL.md` and the files beside it (relative path → text).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Skill {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub skill_md: Option<String>,
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    #[serde(default)]
    pub updated_by: String,
    #[serde(default)]
    pub created_ms: i64,
    #[serde(default)]
    pub updated_ms: i64,
}

// ── Jobs ──

/// `POST /v1/runner/jobs`: wait up to `wait_seconds` (at most 25) for jobs of the lease without a result
/// and not in `seen`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PollJobs {
    pub lease_id: String,
    #[serde(default, deserialize_with = "opt_int::<_, 0, MAX_WAIT_S>")]
    pub wait_seconds: Option<i64>,
    #[serde(default, deserialize_with = "capped::<_, _, MAX_SEEN>")]
    pub seen: Vec<String>,
}

/// What a job poll answers. A job this runner cannot read is left out rather than failing the others.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JobsAnswer {
    #[serde(default, deserialize_with = "readable")]
    pub jobs: Vec<Job>,
    #[serde(flatten)]
    pub stopping: Stopping,
}

/// One job the server sends a turn's runner: its id, its kind and what that kind needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    pub job_id: String,
    pub kind: JobKind,
    #[serde(flatten)]
    pub spec: JobSpec,
}

/// What the server asks of a turn's runner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobKind {
    /// Upload the agent's changes, take the base's newer files ([`SyncResult`]).
    Sync,
    /// Run a command in the turn's folder ([`RunResult`]).
    Run,
    /// Load a grant's SSH key into the turn's ssh-agent ([`SshAgentResult`]).
    SshAgent,
    /// Push the task's base to its git remote ([`PushResult`]).
    Push,
    /// A grant was revoked: end what runs under it ([`ForgetResult`]).
    GrantForget,
    /// An older server's `grant_forget` for the ssh-agent only.
    SshForget,
    /// A kind this runner does not know (a newer server's).
    #[serde(untagged)]
    Other(String),
}

impl JobKind {
    pub fn as_str(&self) -> &str {
        match self {
            JobKind::Sync => "sync",
            JobKind::Run => "run",
            JobKind::SshAgent => "ssh_agent",
            JobKind::Push => "push",
            JobKind::GrantForget => "grant_forget",
            JobKind::SshForget => "ssh_forget",
            JobKind::Other(k) => k,
        }
    }
}

/// A job's spec, as the server stores it and the runner reads it: each kind sets its own fields.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JobSpec {
    /// `run` and a checkout: the shell line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// `run`: seconds before the command is ended (600 when absent). `ssh_agent`: see `ttl_s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<u64>,
    /// `ssh_agent`, `push` and `grant_forget`: the grant concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_id: Option<String>,
    /// `ssh_agent`: how long the key stays loaded (`ssh-add -t`); no limit when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_s: Option<u64>,
    /// `push`: the remote repository, the branch, the commit message and the commit agentsky last pushed
    /// there (the new commit's parent; absent at the first push).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_head: Option<String>,
    /// `grant_forget`: the revoked grant was an ssh key's (the turn's ssh-agent ends too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh: Option<bool>,
}

/// `POST /v1/runner/jobs/result`: what a job (or a checkout) ended with; the server keeps the first
/// answer. `result` is the kind's own result ([`RunResult`], [`SyncResult`], …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobResult {
    pub lease_id: String,
    pub job_id: String,
    pub result: Value,
}

/// What a job result post answers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Accepted {
    #[serde(default)]
    pub ok: bool,
}

/// A `run` job's or a checkout's result: `exit_code` is `None` when the command was ended; `output` is
/// its tail, tokens masked.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    #[serde(default)]
    pub exit_code: Option<i64>,
    #[serde(default)]
    pub timed_out: bool,
    #[serde(default)]
    pub output: String,
    /// Why it did not run or did not finish.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A `sync` job's result (`ok: false` with `error` when it could not finish).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SyncResult {
    #[serde(default)]
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uploaded: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deleted: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refreshed: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// An `ssh_agent` job's result: the agent's socket, or why the key is not loaded.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SshAgentResult {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A `push` job's result: the commit now at the remote branch's head, or why not.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PushResult {
    #[serde(default)]
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A `grant_forget` job's result: how many granted commands were ended, and whether the ssh-agent was.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ForgetResult {
    pub ok: bool,
    pub commands_ended: usize,
    pub agent_ended: bool,
}

/// The result of a job whose kind this runner does not know.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Refusal {
    pub ok: bool,
    pub error: String,
}

/// A body of the protocol as JSON (a job's result as it is posted, an answer as it is sent). Every type
/// here serializes to an object; one that could not would be a bug in this crate.
pub fn to_value(body: &impl Serialize) -> Value {
    serde_json::to_value(body).unwrap_or(Value::Null)
}

/// A job's result as the one who asked reads it (the kind's defaults for anything missing).
pub fn read_result<T: DeserializeOwned + Default>(v: &Value) -> T {
    serde_json::from_value(v.clone()).unwrap_or_default()
}

/// `POST /v1/runner/ssh-key`: the private key of an `ssh_agent` job's grant, handed out once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SshKeyAsk {
    pub lease_id: String,
    pub job_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SshKey {
    #[serde(default)]
    pub private_key: String,
}

/// `GET /v1/runner/criteria?lease_id=`: the standing goal's command criteria.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Criteria {
    #[serde(default)]
    pub commands: Vec<String>,
}

// ── Granted commands ──

/// `POST /v1/runner/credential`: a grant's credential for a command the runner runs under it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CredentialAsk {
    pub lease_id: String,
    pub grant_id: String,
    /// What the command needs, as the runner classified it.
    #[serde(default)]
    pub scopes: Vec<Scope>,
}

/// What a command does to a target ([`crate::targets::SCOPES`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    Read,
    Write,
    Deploy,
    Delete,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Write => "write",
            Scope::Deploy => "deploy",
            Scope::Delete => "delete",
        }
    }

    /// A scope's name as the shims' classification gives it.
    pub fn parse(name: &str) -> Option<Self> {
        [Scope::Read, Scope::Write, Scope::Deploy, Scope::Delete].into_iter().find(|s| s.as_str() == name)
    }
}

/// A grant's credential as the runner gets it: variables for the command's environment, or a key for the
/// turn's own ssh-agent, each good for `ttl_s` seconds (the grant's time left).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Credential {
    Env {
        #[serde(default)]
        env: BTreeMap<String, String>,
        #[serde(default)]
        scopes: Vec<String>,
        #[serde(default)]
        ttl_s: Option<u64>,
    },
    Ssh {
        #[serde(default)]
        private_key: String,
        #[serde(default)]
        ttl_s: Option<u64>,
        #[serde(default)]
        scopes: Vec<String>,
    },
}

/// `POST /v1/runner/commands`: how a command the runner ran under a grant exited.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandReport {
    pub lease_id: String,
    pub grant_id: String,
    /// The command as the runner ran it: the CLI's name, then its arguments.
    pub argv: Vec<String>,
    pub exit_code: i64,
}

/// What a command report answers: the audit log's action, and whether it is a deploy proof.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CommandRecorded {
    #[serde(default)]
    pub recorded: String,
    #[serde(default)]
    pub proof: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_claim_is_a_checkout_or_a_turn() {
        let c: Claimed = serde_json::from_value(json!({"checkout": {"job_id": "job_1", "kind": "checks",
            "lease_id": "l", "lease_expires_ms": 5, "session_id": "ses_1", "command": "make", "timeout_s": null}}))
        .unwrap();
        assert!(matches!(c, Claimed::Checkout { checkout } if checkout.command == "make"));
        let t: Claimed = serde_json::from_value(json!({"lease_id": "l", "session_id": "s", "message_id": "m",
            "history": [{"role": "peer", "from_session_id": "ses_2", "text": "hi"}, {"role": "robot", "text": "?"}],
            "agent": null, "session_token": "sst_x", "session_server": "http://s/v1/session/mcp"}))
        .unwrap();
        let Claimed::Turn(t) = t else { panic!("a turn") };
        assert_eq!((t.attempt, t.agent_name(), t.history[1].role), (1, "?", Role::Other));
        assert!(serde_json::from_value::<Claimed>(json!({"lease_id": "l"})).is_err());
    }

    #[test]
    fn the_history_file_keeps_its_shape() {
        let h = HistoryEntry { from_session_id: None, role: Role::User, text: "hi".into() };
        assert_eq!(serde_json::to_string(&h).unwrap(), r#"{"role":"user","text":"hi"}"#);
    }

    #[test]
    fn stopping_reads_and_writes_as_before() {
        let a: HeartbeatAnswer = serde_json::from_value(json!({"lease_expires_ms": 1, "stop": true})).unwrap();
        assert_eq!(a.stopping, Stopping::session(true));
        let v = serde_json::to_value(EventsAnswer { accepted: 0, stopping: Stopping::cancelled() }).unwrap();
        assert_eq!(v, json!({"accepted": 0, "stop": true, "reason": "cancelled"}));
    }

    #[test]
    fn requests_keep_their_limits_and_unknown_jobs_are_left_out() {
        let events: Vec<Value> = (0..501).map(|i| json!({"key": format!("k{i}"), "type": "status"})).collect();
        let e = serde_json::from_value::<PostEvents>(json!({"lease_id": "l", "events": events})).unwrap_err();
        assert!(e.to_string().contains("may hold at most 500 items (got 501)"), "{e}");
        let e = serde_json::from_value::<PollJobs>(json!({"lease_id": "l", "wait_seconds": 26})).unwrap_err();
        assert!(e.to_string().contains("must be between 0 and 25 (got 26)"), "{e}");
        let p: PostEvents = serde_json::from_value(json!({"lease_id": "l", "events": [
            {"key": "l-1", "type": "tool_call", "call_id": "c", "arguments": {"a": 1}}], "done": "completed"}))
        .unwrap();
        assert_eq!(
            (p.events[0].kind, p.done, p.events[0].body["call_id"].as_str()),
            (EventType::ToolCall, Some(Done::Completed), Some("c"))
        );
        let a: JobsAnswer = serde_json::from_value(json!({"jobs": [{"job_id": "j1", "kind": "run", "command": "make"},
            {"kind": "sync"}, {"job_id": "j2", "kind": "dance"}], "stop": false}))
        .unwrap();
        assert_eq!(a.jobs.len(), 2);
        assert_eq!(
            (a.jobs[0].spec.command.as_deref(), &a.jobs[1].kind),
            (Some("make"), &JobKind::Other("dance".into()))
        );
        let job = serde_json::to_value(Job { job_id: "j".into(), kind: JobKind::SshAgent, spec: JobSpec::default() });
        assert_eq!(job.unwrap(), json!({"job_id": "j", "kind": "ssh_agent"}));
    }

    #[test]
    fn credentials_are_env_or_ssh() {
        let c: Credential =
            serde_json::from_value(json!({"kind": "env", "env": {"A": "b"}, "scopes": ["deploy"], "ttl_s": null}))
                .unwrap();
        assert_eq!(
            c,
            Credential::Env { env: [("A".into(), "b".into())].into(), scopes: vec!["deploy".into()], ttl_s: None }
        );
        assert!(serde_json::from_value::<Credential>(json!({"kind": "magic"})).is_err());
    }
}
