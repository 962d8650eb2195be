//! `sky runner`: runs the turns of the workspace's `runner` agents on this machine, over the server's
//! runner protocol (`/v1/runner/*`, see the server's `src/runner.rs`):
//!
//! 1. **Register** once with a workspace key (`POST /v1/runners`, owners and admins): the runner token
//!    (`srt_…`) is kept in `<config>/agentsky/runners.json` (0600, one entry per server and runner name)
//!    and used from then on; output shows its prefix only. A token the server no longer knows is replaced
//!    by registering again, when a key is at hand.
//! 2. **Claim** turns with a long wait (`POST /v1/runner/claim`, 25 s); 204 means none waited. A claim
//!    may hand over a checkout instead: a session's checks, run in a fresh checkout of its lane.
//! 3. **Run** each turn ([`crate::turn`]): a fresh folder with the task's files, the agent's command run
//!    there, its output streamed as events, the lease renewed, the server's jobs for the turn handled
//!    (`sync`, `run`, `ssh_agent`), the changed files uploaded, the goal's criteria commands run, the turn
//!    ended.
//!
//! The command is the runner's, not the agent's: `sky runner -- <command…>` or `--command "<shell line>"`;
//! it is remembered with the registration, so the next `sky runner --name <same>` needs none.
//! Exit: `--once` returns after one turn (an error when it did not complete); otherwise it runs until
//! stopped. Network failures are retried with a growing pause.

use crate::api::{normalize_server, Api, Reply};
use crate::auth::{self, say};
use crate::context::Context;
use crate::turn::{Outcome, Timing, TurnRunner};
use crate::{config, key_prefix, Error, Result};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// `sky runner`'s flags.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--server` and `--key` (the key is needed only to register).
    pub auth: auth::Options,
    /// `--name`: which runner of this machine; `sky on <host>` by default.
    pub name: Option<String>,
    /// `--workspace`: register in this workspace instead of the key's own.
    pub workspace: Option<String>,
    /// The agent's command: `-- <argv…>`, or `--command` as `sh -c <line>`.
    pub command: Option<Vec<String>>,
    /// `--once`: run one turn, then exit.
    pub once: bool,
    /// `--push-root`: where a task's local git remote may be pushed to.
    pub push_roots: Vec<PathBuf>,
}

/// One registered runner, as `runners.json` keeps it.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct Registration {
    pub server: String,
    pub name: String,
    pub runner_id: String,
    /// The runner's bearer (`srt_…`). Never printed in full.
    pub token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// The command last given for this runner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("server", &self.server)
            .field("name", &self.name)
            .field("runner_id", &self.runner_id)
            .field("token", &format!("{}…", key_prefix(&self.token)))
            .field("workspace", &self.workspace)
            .field("command", &self.command)
            .finish()
    }
}

/// Every runner registered from this machine's config folder.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Registrations {
    #[serde(default)]
    pub runners: Vec<Registration>,
}

impl Registrations {
    pub fn find(&self, server: &str, name: &str) -> Option<&Registration> {
        self.runners.iter().find(|r| normalize_server(&r.server) == server && r.name == name)
    }

    /// Every entry of this server and name (one per workspace it was registered in).
    pub fn all(&self, server: &str, name: &str) -> Vec<&Registration> {
        self.runners.iter().filter(|r| normalize_server(&r.server) == server && r.name == name).collect()
    }

    /// Adds or replaces the entry of `reg`'s server, name and workspace.
    pub fn put(&mut self, reg: Registration) {
        let server = normalize_server(&reg.server);
        self.runners
            .retain(|r| !(normalize_server(&r.server) == server && r.name == reg.name && r.workspace == reg.workspace));
        self.runners.push(reg);
    }
}

pub fn registrations_path(ctx: &Context) -> PathBuf {
    ctx.sky_dir().join("runners.json")
}

pub fn load_registrations(ctx: &Context) -> Result<Registrations> {
    let p = registrations_path(ctx);
    match std::fs::read_to_string(&p) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| {
            Error::new(format!("{} is not valid ({e}); delete it and `sky runner` registers again", ctx.show(&p)))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Registrations::default()),
        Err(e) => Err(Error::new(format!("cannot read {}: {e}", ctx.show(&p)))),
    }
}

/// Writes the registrations, 0600 in a 0700 folder.
pub fn save_registrations(ctx: &Context, regs: &Registrations) -> Result<()> {
    let p = registrations_path(ctx);
    let text = serde_json::to_string_pretty(regs).map_err(|e| Error::new(e.to_string()))? + "\n";
    crate::files::write_private(&p, &text).map_err(|e| Error::new(format!("cannot write {}: {e}", ctx.show(&p))))
}

/// Why a runner call failed, as the runner must react to it.
#[derive(Debug)]
pub enum CallError {
    /// 409: the lease expired or another runner has the turn (or the turn is over): stop the turn.
    LeaseLost(String),
    /// 401: the runner token is unknown or revoked.
    Unauthorized(String),
    /// No answer, or a 5xx / 429: worth retrying with the same request.
    Network(String),
    /// Any other refusal: retrying the same request will not help.
    Refused(String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::LeaseLost(m) => write!(f, "the lease is lost ({m})"),
            CallError::Unauthorized(m) => write!(f, "the runner token was refused ({m})"),
            CallError::Network(m) | CallError::Refused(m) => f.write_str(m),
        }
    }
}

/// A claimed turn: what the server's claim answered.
#[derive(Clone)]
pub struct Turn {
    pub lease_id: String,
    pub attempt: i64,
    pub session_id: String,
    pub task_id: String,
    pub message_id: String,
    pub message: String,
    /// `[{role, text}]`, oldest first (this turn's message included).
    pub history: Value,
    /// `{agent_id, name, harness, model, thinking, instructions}`.
    pub agent: Value,
    /// The session token (`sst_…`) the agent inside uses; it only ever goes into the child's environment.
    pub session_token: String,
    /// `<server>/v1/session/mcp`.
    pub session_server: String,
    /// `<server>/v1/help/mcp` (older servers leave it out).
    pub help_server: Option<String>,
}

impl Turn {
    pub fn from_json(v: &Value) -> Result<Self> {
        let s = |k: &str| v[k].as_str().map(str::to_owned);
        let need = |k: &str| s(k).ok_or_else(|| Error::new(format!("the claim answer has no `{k}`")));
        Ok(Self {
            lease_id: need("lease_id")?,
            attempt: v["attempt"].as_i64().unwrap_or(1),
            session_id: need("session_id")?,
            task_id: s("task_id").unwrap_or_default(),
            message_id: need("message_id")?,
            message: s("message").unwrap_or_default(),
            history: if v["history"].is_array() { v["history"].clone() } else { json!([]) },
            agent: v["agent"].clone(),
            session_token: need("session_token")?,
            session_server: need("session_server")?,
            help_server: s("help_server"),
        })
    }

    /// The agent's name, for output.
    pub fn agent_name(&self) -> &str {
        self.agent["name"].as_str().unwrap_or("?")
    }
}

/// What a claim hands a runner.
pub enum Claimed {
    Turn(Box<Turn>),
    Checkout(Checkout),
}

/// A session's checks for any runner of the workspace, run in a fresh checkout of its lane
/// ([`crate::turn::TurnRunner::run_checkout`]).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Checkout {
    pub job_id: String,
    pub lease_id: String,
    pub session_id: String,
    pub command: String,
    #[serde(default)]
    pub timeout_s: Option<u64>,
}

/// The runner protocol's calls, with the runner token.
#[derive(Clone)]
pub struct Client {
    /// For claims, which hold the request up to the wait.
    long: Api,
    /// For everything else: a short timeout, so a hung call cannot outlast the lease.
    short: Api,
    token: String,
}

impl Client {
    pub fn new(server: &str, token: &str) -> Self {
        Self {
            long: Api::with_timeout(server, Duration::from_secs(60)),
            short: Api::with_timeout(server, Duration::from_secs(20)),
            token: token.to_owned(),
        }
    }

    pub fn server(&self) -> &str {
        &self.short.base
    }

    pub fn token(&self) -> &str {
        &self.token
    }

    fn check(reply: Result<Reply>, what: &str) -> std::result::Result<Reply, CallError> {
        let r = reply.map_err(|e| CallError::Network(format!("{what}: {e}")))?;
        let message = || format!("{what}: {}", r.error_message());
        match r.status {
            200..=299 => Ok(r),
            409 => Err(CallError::LeaseLost(message())),
            401 => Err(CallError::Unauthorized(message())),
            429 | 500..=599 => Err(CallError::Network(message())),
            _ => Err(CallError::Refused(message())),
        }
    }

    /// A waiting turn or checkout, or `None` when none came within `wait_seconds` (at most 25).
    pub fn claim(&self, wait_seconds: u64) -> std::result::Result<Option<Claimed>, CallError> {
        let r = self.long.post_json(
            "/v1/runner/claim",
            Some(&self.token),
            &json!({ "wait_seconds": wait_seconds.min(25) }),
        );
        let r = Self::check(r, "POST /v1/runner/claim")?;
        if r.status == 204 {
            return Ok(None);
        }
        if let Some(c) = r.body.get("checkout") {
            let c = Checkout::deserialize(c).map_err(|e| CallError::Refused(format!("the claim's checkout: {e}")))?;
            return Ok(Some(Claimed::Checkout(c)));
        }
        Turn::from_json(&r.body).map(|t| Some(Claimed::Turn(Box::new(t)))).map_err(|e| CallError::Refused(e.0))
    }

    /// Renews the lease; `Some` when the command must end (the session was stopped, or the turn cancelled).
    pub fn heartbeat(&self, lease_id: &str) -> std::result::Result<Option<Stop>, CallError> {
        let r = self.short.post_json("/v1/runner/heartbeat", Some(&self.token), &json!({ "lease_id": lease_id }));
        Ok(Stop::of(&Self::check(r, "POST /v1/runner/heartbeat")?.body))
    }

    /// Reports events (each once, by its key) and optionally ends the turn, with the goal's criteria
    /// `checks` (sent only when there are some); `Some` when the command must end.
    pub fn events(
        &self,
        lease_id: &str,
        events: &[Value],
        done: Option<&str>,
        checks: &[Value],
        usage: Option<&Value>,
    ) -> std::result::Result<Option<Stop>, CallError> {
        let mut body = json!({ "lease_id": lease_id, "events": events });
        if let Some(d) = done {
            body["done"] = json!(d);
        }
        if let Some(u) = usage {
            body["usage"] = u.clone();
        }
        if !checks.is_empty() {
            body["checks"] = json!(checks);
        }
        let r = self.short.post_json("/v1/runner/events", Some(&self.token), &body);
        Ok(Stop::of(&Self::check(r, "POST /v1/runner/events")?.body))
    }

    /// The task folder as the session sees it: `(path, content)`.
    pub fn files(&self, lease_id: &str) -> std::result::Result<Vec<(String, String)>, CallError> {
        let r = self.long.get(&format!("/v1/runner/files?lease_id={}", query_escape(lease_id)), Some(&self.token));
        let body = Self::check(r, "GET /v1/runner/files")?.body;
        let files = body["files"].as_array().cloned().unwrap_or_default();
        Ok(files
            .iter()
            .filter_map(|f| Some((f["path"].as_str()?.to_owned(), f["content"].as_str()?.to_owned())))
            .collect())
    }

    /// The workspace's company skills in full (`[{name, skill_md, files}]`).
    pub fn skills(&self, lease_id: &str) -> std::result::Result<Vec<Value>, CallError> {
        let r = self.short.get(&format!("/v1/runner/skills?lease_id={}", query_escape(lease_id)), Some(&self.token));
        Ok(Self::check(r, "GET /v1/runner/skills")?.body["skills"].as_array().cloned().unwrap_or_default())
    }

    /// Writes one file into the session's folder (its lane when the task has lanes).
    pub fn put_file(&self, lease_id: &str, path: &str, content: &str) -> std::result::Result<(), CallError> {
        let body = json!({ "lease_id": lease_id, "path": path, "content": content });
        Self::check(self.long.put_json("/v1/runner/files", Some(&self.token), &body), &format!("writing {path}"))
            .map(drop)
    }

    /// Deletes one file from the session's folder (a tombstone in its lane until `land`); `Ok(false)` when
    /// it was gone already (a retry whose answer was lost).
    pub fn delete_file(&self, lease_id: &str, path: &str) -> std::result::Result<bool, CallError> {
        let url = format!("/v1/runner/files?lease_id={}&path={}", query_escape(lease_id), query_escape(path));
        let r = Self::check(self.long.delete(&url, Some(&self.token)), &format!("deleting {path}"))?;
        Ok(r.body["deleted"] == true)
    }

    /// Waits up to `wait_seconds` (at most 25) for jobs of this lease that are not done and not in `seen`
    /// (the last 100 ids are sent). `None` when the server has no job channel (404: an older server).
    pub fn jobs(
        &self,
        lease_id: &str,
        wait_seconds: u64,
        seen: &[String],
    ) -> std::result::Result<Option<Jobs>, CallError> {
        let seen = &seen[seen.len().saturating_sub(100)..];
        let body = json!({ "lease_id": lease_id, "wait_seconds": wait_seconds.min(25), "seen": seen });
        let r = self.long.post_json("/v1/runner/jobs", Some(&self.token), &body);
        if r.as_ref().is_ok_and(|r| r.status == 404) {
            return Ok(None);
        }
        let body = Self::check(r, "POST /v1/runner/jobs")?.body;
        // A job this runner cannot read is left out rather than failing the others.
        let jobs = body["jobs"].as_array().into_iter().flatten().filter_map(|j| Job::deserialize(j).ok()).collect();
        Ok(Some(Jobs { jobs, stop: Stop::of(&body) }))
    }

    /// Reports what a job ended with (the server keeps the first answer).
    pub fn job_result(&self, lease_id: &str, job_id: &str, result: &Value) -> std::result::Result<(), CallError> {
        let body = json!({ "lease_id": lease_id, "job_id": job_id, "result": result });
        let r = self.short.post_json("/v1/runner/jobs/result", Some(&self.token), &body);
        Self::check(r, "POST /v1/runner/jobs/result").map(drop)
    }

    /// The private key an `ssh_agent` job loads. It goes only into `ssh-add`'s stdin.
    pub fn ssh_key(&self, lease_id: &str, job_id: &str) -> std::result::Result<String, CallError> {
        let body = json!({ "lease_id": lease_id, "job_id": job_id });
        let r = Self::check(
            self.short.post_json("/v1/runner/ssh-key", Some(&self.token), &body),
            "POST /v1/runner/ssh-key",
        )?;
        match r.body["private_key"].as_str() {
            Some(k) if !k.trim().is_empty() => Ok(k.to_owned()),
            _ => Err(CallError::Refused("POST /v1/runner/ssh-key answered without a private_key".into())),
        }
    }

    /// The credential of a grant the leased session may use, for a command the runner runs under it that
    /// needs `scopes`. It goes only into that command's environment (or the turn's ssh-agent).
    pub fn credential(
        &self,
        lease_id: &str,
        grant_id: &str,
        scopes: &[&str],
    ) -> std::result::Result<GrantCredential, CallError> {
        let body = json!({ "lease_id": lease_id, "grant_id": grant_id, "scopes": scopes });
        let what = "POST /v1/runner/credential";
        let b = Self::check(self.short.post_json("/v1/runner/credential", Some(&self.token), &body), what)?.body;
        match b["kind"].as_str() {
            Some("env") => Ok(GrantCredential::Env {
                vars: b["env"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                    .collect(),
                ttl_s: b["ttl_s"].as_u64(),
            }),
            Some("ssh") => match b["private_key"].as_str() {
                Some(key) if !key.trim().is_empty() => {
                    Ok(GrantCredential::Ssh { private_key: key.to_owned(), ttl_s: b["ttl_s"].as_u64() })
                }
                _ => Err(CallError::Refused(format!("{what} answered an ssh credential without a key"))),
            },
            _ => Err(CallError::Refused(format!("{what} answered a credential of an unknown kind"))),
        }
    }

    /// Reports how a command the runner ran under a grant exited: the audit log's record, and the deploy
    /// proof when it exited 0 under a grant covering `deploy`.
    pub fn command(
        &self,
        lease_id: &str,
        grant_id: &str,
        argv: &[String],
        exit_code: i32,
    ) -> std::result::Result<(), CallError> {
        let body = json!({ "lease_id": lease_id, "grant_id": grant_id, "argv": argv, "exit_code": exit_code });
        let r = self.short.post_json("/v1/runner/commands", Some(&self.token), &body);
        Self::check(r, "POST /v1/runner/commands").map(drop)
    }

    /// The command criteria of the session's standing goal (none when the server has no such route).
    pub fn criteria(&self, lease_id: &str) -> std::result::Result<Vec<String>, CallError> {
        let r = self.short.get(&format!("/v1/runner/criteria?lease_id={}", query_escape(lease_id)), Some(&self.token));
        if r.as_ref().is_ok_and(|r| r.status == 404) {
            return Ok(vec![]);
        }
        let body = Self::check(r, "GET /v1/runner/criteria")?.body;
        Ok(body["commands"].as_array().into_iter().flatten().filter_map(|c| c.as_str().map(str::to_owned)).collect())
    }
}

/// A grant's credential as the runner gets it for a command it runs.
pub enum GrantCredential {
    /// Variables for the command's environment, good for `ttl_s` seconds (the grant's time left).
    Env { vars: Vec<(String, String)>, ttl_s: Option<u64> },
    /// A key for the turn's own ssh-agent, for `ttl_s` seconds.
    Ssh { private_key: String, ttl_s: Option<u64> },
}

/// One job the server sends a turn's runner (`POST /v1/runner/jobs`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Job {
    pub job_id: String,
    /// `sync`, `run` or `ssh_agent`.
    pub kind: String,
    /// `run`: the shell line.
    #[serde(default)]
    pub command: Option<String>,
    /// `run`: seconds before the command is ended (600 when absent).
    #[serde(default)]
    pub timeout_s: Option<u64>,
    /// `ssh_agent`: the grant the key is served under.
    #[serde(default)]
    pub grant_id: Option<String>,
    /// `ssh_agent`: how long the key stays loaded (`ssh-add -t`); no limit when absent.
    #[serde(default)]
    pub ttl_s: Option<u64>,
    /// `push`: the remote repository, the branch, the commit message and the commit agentsky last pushed
    /// there (the new commit's parent; absent at the first push).
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub branch: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub expected_head: Option<String>,
    /// `grant_forget`: the revoked grant was an ssh key's (the turn's ssh-agent ends too).
    #[serde(default)]
    pub ssh: Option<bool>,
}

/// An answer of `POST /v1/runner/jobs`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Jobs {
    pub jobs: Vec<Job>,
    /// The command must end.
    pub stop: Option<Stop>,
}

/// Why the server says to end the agent's command (`stop: true` in a heartbeat, job poll or event post).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The session was stopped.
    Session,
    /// Only this turn was cancelled (`reason: "cancelled"`); the session takes its next message.
    TurnCancelled,
}

impl Stop {
    pub fn of(body: &Value) -> Option<Stop> {
        match (body["stop"] == true, body["reason"].as_str()) {
            (false, _) => None,
            (true, Some("cancelled")) => Some(Stop::TurnCancelled),
            (true, _) => Some(Stop::Session),
        }
    }
}

fn query_escape(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Registers a runner with a workspace key.
pub fn register(api: &Api, key: &str, name: &str, workspace: Option<&str>) -> Result<Registration> {
    let mut body = json!({ "name": name });
    if let Some(w) = workspace {
        body["workspace"] = json!(w);
    }
    let r = api.post_json("/v1/runners", Some(key), &body)?;
    if r.status == 401 || r.status == 403 {
        return Err(Error::new(format!(
            "{} refused to register a runner with the key {}… ({}); registering needs an owner's or admin's key",
            api.base,
            key_prefix(key),
            r.error_message()
        )));
    }
    let b = r.into_ok("registering the runner (POST /v1/runners)")?;
    let (Some(runner_id), Some(token)) = (b["runner_id"].as_str(), b["token"].as_str()) else {
        return Err(Error::new(format!("{} answered the registration without a runner token", api.base)));
    };
    Ok(Registration {
        server: api.base.clone(),
        name: name.to_owned(),
        runner_id: runner_id.to_owned(),
        token: token.to_owned(),
        workspace: b["workspace"].as_str().map(str::to_owned).or_else(|| workspace.map(str::to_owned)),
        command: None,
    })
}

/// `--command "<line>"` as an argv: the platform's shell runs it.
pub fn shell_command(line: &str) -> Vec<String> {
    if cfg!(windows) {
        vec!["cmd".into(), "/d".into(), "/c".into(), line.into()]
    } else {
        vec!["sh".into(), "-c".into(), line.into()]
    }
}

/// Shows a command for people.
pub fn show_command(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,@+%".contains(c)) {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Finds or makes the registration for this server and name (re-registering when `fresh` is set), with
/// `command` remembered on it.
fn registration(
    ctx: &Context,
    opts: &Options,
    server: &str,
    name: &str,
    fresh: bool,
    out: &mut dyn Write,
) -> Result<Registration> {
    let mut regs = load_registrations(ctx)?;
    let stored = config::load(ctx).unwrap_or_default();
    let key = auth::key(ctx, &opts.auth, &stored, server).map(|(k, _)| k);
    // The workspace this start is for: `--workspace`, else the key's own as the server says, so a key of
    // another workspace never runs that workspace's turns under this one's registration.
    let wanted = match (&opts.workspace, &key) {
        (Some(w), _) => Some(w.clone()),
        (None, Some(k)) => match auth::check_key(&Api::new(server), k) {
            Ok(w) if w != "?" => Some(w),
            Ok(_) => None,
            Err(e) => {
                say(out, &format!("sky runner: the key's workspace could not be checked ({e})"));
                None
            }
        },
        (None, None) => None,
    };
    let mine = regs.all(server, name);
    let existing = match &wanted {
        _ if fresh => None,
        // An entry of an older sky does not say its workspace: it is taken as it is.
        Some(w) => mine.iter().find(|r| r.workspace.as_deref() == Some(w.as_str()) || r.workspace.is_none()),
        None if mine.len() > 1 => {
            let places: Vec<&str> = mine.iter().map(|r| r.workspace.as_deref().unwrap_or("?")).collect();
            return Err(Error::new(format!(
                "\"{name}\" is registered on {server} in the workspaces {}; pick one with --workspace",
                places.join(", ")
            )));
        }
        None => mine.first(),
    }
    .map(|r| (*r).clone());
    let elsewhere: Vec<String> =
        mine.iter().filter_map(|r| r.workspace.clone()).filter(|w| wanted.as_ref().is_some_and(|x| x != w)).collect();
    let mut reg = match existing {
        Some(r) => r,
        None => {
            let Some(key) = key else {
                return Err(Error::new(format!(
                    "sky runner registers with a workspace key first: sign in with `sky auth login --server {server}` (or pass --key / set AGENTSKY_API_KEY)"
                )));
            };
            if !fresh && !elsewhere.is_empty() {
                say(
                    out,
                    &format!(
                        "sky runner: \"{name}\" is registered in workspace {}, not in {} (this key's): registering it there too; the other registration stays for that workspace's key.",
                        elsewhere.join(", "),
                        wanted.as_deref().unwrap_or("?")
                    ),
                );
            }
            let mut reg = register(&Api::new(server), &key, name, opts.workspace.as_deref())?;
            reg.command = regs.find(server, name).and_then(|r| r.command.clone());
            say(
                out,
                &format!(
                    "sky runner: registered \"{name}\" ({}) in workspace {} on {server}; its token {}… is kept in {} (readable by you only).",
                    reg.runner_id,
                    reg.workspace.as_deref().unwrap_or("?"),
                    key_prefix(&reg.token),
                    ctx.show(&registrations_path(ctx))
                ),
            );
            reg
        }
    };
    if let Some(c) = &opts.command {
        reg.command = Some(c.clone());
    }
    if !regs.runners.contains(&reg) {
        regs.put(reg.clone());
        save_registrations(ctx, &regs)?;
    }
    Ok(reg)
}

/// `sky runner`: registers if needed, then claims and runs turns until stopped (or one, with `--once`).
pub fn run(ctx: &Context, opts: &Options, out: &mut dyn Write) -> Result<()> {
    let stored = config::load(ctx).unwrap_or_default();
    let server = auth::server(ctx, &opts.auth, &stored);
    let name = opts.name.clone().unwrap_or_else(auth::default_device_name);
    let mut reg = registration(ctx, opts, &server, &name, false, out)?;
    let command = reg.command.clone().unwrap_or_default();
    let sky_exe = std::env::current_exe().map_err(|e| Error::new(format!("cannot tell where sky is: {e}")))?;
    // The runner's own owner-only folder: turn folders inside it may have names a session keeps.
    let scratch = crate::files::private_temp_dir(&std::env::temp_dir(), "sky-runner-")
        .map_err(|e| Error::new(format!("cannot make the runner's folder: {e}")))?;
    let mut turns = TurnRunner {
        client: Client::new(&server, &reg.token),
        command,
        sky_exe,
        path: ctx.path.clone(),
        scratch: scratch.path().to_owned(),
        push_roots: opts.push_roots.clone(),
        timing: Timing::default(),
        grants: Default::default(),
        conversations: Default::default(),
    };
    let runs = match turns.command.is_empty() {
        true => "Claude Code and Codex agents (`runner` agents need `sky runner -- <command…>`)".to_owned(),
        false => format!("`{}` for `runner` agents, Claude Code and Codex for theirs", show_command(&turns.command)),
    };
    say(
        out,
        &format!(
            "sky runner: \"{name}\" ({}) in workspace {} on {server} runs {runs}; waiting for turns{}.",
            reg.runner_id,
            reg.workspace.as_deref().unwrap_or("? (registered by an older sky)"),
            if opts.once { " (one, --once)" } else { "; Ctrl-C stops it" }
        ),
    );
    let mut reregistered = false;
    let mut pause = Duration::from_secs(1);
    loop {
        match turns.client.claim(turns.timing.claim_wait_s) {
            Ok(None) => pause = Duration::from_secs(1),
            Ok(Some(Claimed::Checkout(c))) => {
                pause = Duration::from_secs(1);
                if let Err(e) = turns.run_checkout(&c, out) {
                    say(
                        out,
                        &format!("sky runner: the checks' result for session {} was not taken: {e}", c.session_id),
                    );
                }
            }
            Ok(Some(Claimed::Turn(turn))) => {
                pause = Duration::from_secs(1);
                let outcome = turns.run_turn(&turn, out)?;
                if opts.once {
                    return match outcome {
                        Outcome::Completed => Ok(()),
                        other => Err(Error::new(format!("the turn did not complete: {}", other.describe()))),
                    };
                }
            }
            Err(CallError::Unauthorized(why)) if !reregistered => {
                say(out, &format!("sky runner: {why}; registering \"{name}\" again"));
                reg = registration(ctx, opts, &server, &name, true, out)?;
                turns.client = Client::new(&server, &reg.token);
                reregistered = true;
            }
            Err(CallError::Network(why)) => {
                say(out, &format!("sky runner: {why}; trying again in {} s", pause.as_secs()));
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_secs(30));
            }
            Err(e) => return Err(Error::new(format!("claiming a turn failed: {e}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_shown_quoted_where_needed() {
        let argv: Vec<String> = ["sh", "-c", "echo 'hi' there", "a=b"].iter().map(|s| s.to_string()).collect();
        assert_eq!(show_command(&argv), r#"sh -c 'echo '\''hi'\'' there' a=b"#);
    }

    #[test]
    fn registrations_are_kept_per_server_and_name_and_never_debug_printed() {
        let reg = |server: &str, name: &str, token: &str| Registration {
            server: server.into(),
            name: name.into(),
            runner_id: "run_1".into(),
            token: token.into(),
            workspace: None,
            command: None,
        };
        let mut regs = Registrations::default();
        regs.put(reg("http://a/", "laptop", "srt_one_0123456789abcdef"));
        regs.put(reg("http://b", "laptop", "srt_two_0123456789abcdef"));
        regs.put(reg("http://a", "laptop", "srt_three_0123456789abcdef"));
        assert_eq!(regs.runners.len(), 2);
        assert_eq!(regs.find("http://a", "laptop").unwrap().token, "srt_three_0123456789abcdef");
        assert!(regs.find("http://a", "server").is_none());
        let shown = format!("{:?}", regs);
        assert!(!shown.contains("srt_three_0123456789abcdef") && shown.contains("srt_three_01…"), "{shown}");
    }

    #[test]
    fn claims_parse_and_lease_ids_are_escaped() {
        let turn =
            Turn::from_json(&json!({"lease_id": "lease_1", "attempt": 2, "session_id": "ses_1", "task_id": "ses_1",
            "message_id": "msg_1", "message": "hi", "history": [{"role": "user", "text": "hi"}],
            "agent": {"name": "Coder"}, "session_token": "sst_x", "session_server": "http://s/v1/session/mcp"}))
            .unwrap();
        assert_eq!((turn.attempt, turn.agent_name(), turn.history[0]["text"].as_str()), (2, "Coder", Some("hi")));
        assert!(Turn::from_json(&json!({"lease_id": "l"})).is_err());
        let job = Job::deserialize(&json!({"job_id": "job_1", "kind": "run", "command": "make", "extra": 1})).unwrap();
        assert_eq!((job.command.as_deref(), job.timeout_s, job.ttl_s), (Some("make"), None, None));
        assert!(Job::deserialize(&json!({"kind": "sync"})).is_err());
        assert_eq!(query_escape("lease_a-b.c~"), "lease_a-b.c~");
        assert_eq!(query_escape("a b&c"), "a%20b%26c");
    }
}
