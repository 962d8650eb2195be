//! The runner protocol's client: the calls `sky runner` makes to the server (`/v1/runner/*`) with its
//! runner token, their bodies typed by [`agentsky_wire::runner`], and how a failed call must be taken.
//! Both the runner's claim loop (`runner.rs`) and a turn (`turn.rs`, `turn/`) call the server through it;
//! it names neither.

use crate::api::{Api, Reply};
use agentsky_wire::runner::{self as wire, route};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use std::time::Duration;

pub use wire::{Check, Checkout, Done, Event, EventType, Job, JobKind, RunResult, Scope, Usage};

/// A claimed turn, as the server hands it over.
pub type Turn = wire::Assignment;

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

type Call<T> = std::result::Result<T, CallError>;

/// What a claim hands a runner.
pub enum Claimed {
    Turn(Box<Turn>),
    Checkout(Checkout),
}

/// A grant's credential as the runner gets it for a command it runs.
pub enum GrantCredential {
    /// Variables for the command's environment, good for `ttl_s` seconds (the grant's time left).
    Env { vars: Vec<(String, String)>, ttl_s: Option<u64> },
    /// A key for the turn's own ssh-agent, for `ttl_s` seconds.
    Ssh { private_key: String, ttl_s: Option<u64> },
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
    pub fn of(s: &wire::Stopping) -> Option<Stop> {
        match (s.stop, s.reason) {
            (false, _) => None,
            (true, Some(wire::StopReason::Cancelled)) => Some(Stop::TurnCancelled),
            (true, _) => Some(Stop::Session),
        }
    }
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

    fn check(reply: crate::Result<Reply>, what: &str) -> Call<Reply> {
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

    /// An answer's body as its type; an empty body reads as the type's defaults.
    fn read<T: DeserializeOwned + Default>(r: Reply, what: &str) -> Call<T> {
        if r.body.is_null() {
            return Ok(T::default());
        }
        serde_json::from_value(r.body).map_err(|e| CallError::Refused(format!("{what} answered unreadably: {e}")))
    }

    fn post(&self, api: &Api, path: &str, body: &impl Serialize) -> crate::Result<Reply> {
        api.post_json(path, Some(&self.token), &wire::to_value(body))
    }

    /// `GET <route>?lease_id=…`.
    fn get_leased(&self, api: &Api, path: &str, lease_id: &str) -> crate::Result<Reply> {
        api.get(&format!("{path}?lease_id={}", query_escape(lease_id)), Some(&self.token))
    }

    /// A waiting turn or checkout, or `None` when none came within `wait_seconds` (at most 25).
    pub fn claim(&self, wait_seconds: u64) -> Call<Option<Claimed>> {
        let wait = wait_seconds.min(wire::MAX_WAIT_S as u64) as i64;
        let r = self.post(&self.long, route::CLAIM, &wire::Claim { wait_seconds: Some(wait) });
        let what = "POST /v1/runner/claim";
        let r = Self::check(r, what)?;
        if r.status == 204 {
            return Ok(None);
        }
        match serde_json::from_value(r.body) {
            Ok(wire::Claimed::Checkout { checkout }) => Ok(Some(Claimed::Checkout(checkout))),
            Ok(wire::Claimed::Turn(turn)) => Ok(Some(Claimed::Turn(turn))),
            Err(e) => Err(CallError::Refused(format!("the claim answer is neither a turn nor a checkout ({e})"))),
        }
    }

    /// Renews the lease; `Some` when the command must end (the session was stopped, or the turn cancelled).
    pub fn heartbeat(&self, lease_id: &str) -> Call<Option<Stop>> {
        let what = "POST /v1/runner/heartbeat";
        let r = self.post(&self.short, route::HEARTBEAT, &wire::Heartbeat { lease_id: lease_id.to_owned() });
        let answer: wire::HeartbeatAnswer = Self::read(Self::check(r, what)?, what)?;
        Ok(Stop::of(&answer.stopping))
    }

    /// Reports events (each once, by its key) and optionally ends the turn, with the goal's criteria
    /// `checks` (sent only when there are some); `Some` when the command must end.
    pub fn events(
        &self,
        lease_id: &str,
        events: &[Event],
        done: Option<Done>,
        checks: &[Check],
        usage: Option<&Usage>,
    ) -> Call<Option<Stop>> {
        let body = wire::PostEvents {
            lease_id: lease_id.to_owned(),
            events: events.to_vec(),
            done,
            checks: checks.to_vec(),
            usage: usage.cloned(),
        };
        let what = "POST /v1/runner/events";
        let answer: wire::EventsAnswer =
            Self::read(Self::check(self.post(&self.short, route::EVENTS, &body), what)?, what)?;
        Ok(Stop::of(&answer.stopping))
    }

    /// The task folder as the session sees it: `(path, content)`.
    pub fn files(&self, lease_id: &str) -> Call<Vec<(String, String)>> {
        let what = "GET /v1/runner/files";
        let answer: wire::Files =
            Self::read(Self::check(self.get_leased(&self.long, route::FILES, lease_id), what)?, what)?;
        Ok(answer.files.into_iter().map(|f| (f.path, f.content)).collect())
    }

    /// The workspace's company skills in full.
    pub fn skills(&self, lease_id: &str) -> Call<Vec<wire::Skill>> {
        let what = "GET /v1/runner/skills";
        let answer: wire::Skills =
            Self::read(Self::check(self.get_leased(&self.short, route::SKILLS, lease_id), what)?, what)?;
        Ok(answer.skills)
    }

    /// Writes one file into the session's folder (its lane when the task has lanes).
    pub fn put_file(&self, lease_id: &str, path: &str, content: &str) -> Call<()> {
        let body =
            wire::WriteFile { lease_id: lease_id.to_owned(), path: path.to_owned(), content: content.to_owned() };
        let r = self.long.put_json(route::FILES, Some(&self.token), &wire::to_value(&body));
        Self::check(r, &format!("writing {path}")).map(drop)
    }

    /// Deletes one file from the session's folder (a tombstone in its lane until `land`); `Ok(false)` when
    /// it was gone already (a retry whose answer was lost).
    pub fn delete_file(&self, lease_id: &str, path: &str) -> Call<bool> {
        let url = format!("{}?lease_id={}&path={}", route::FILES, query_escape(lease_id), query_escape(path));
        let what = format!("deleting {path}");
        let answer: Option<wire::Deleted> =
            Self::read(Self::check(self.long.delete(&url, Some(&self.token)), &what)?, &what)?;
        Ok(answer.is_some_and(|d| d.deleted))
    }

    /// Waits up to `wait_seconds` (at most 25) for jobs of this lease that are not done and not in `seen`
    /// (the last 100 ids are sent). `None` when the server has no job channel (404: an older server).
    pub fn jobs(&self, lease_id: &str, wait_seconds: u64, seen: &[String]) -> Call<Option<Jobs>> {
        let body = wire::PollJobs {
            lease_id: lease_id.to_owned(),
            wait_seconds: Some(wait_seconds.min(wire::MAX_WAIT_S as u64) as i64),
            seen: seen[seen.len().saturating_sub(wire::MAX_SEEN)..].to_vec(),
        };
        let r = self.post(&self.long, route::JOBS, &body);
        if r.as_ref().is_ok_and(|r| r.status == 404) {
            return Ok(None);
        }
        let what = "POST /v1/runner/jobs";
        let answer: wire::JobsAnswer = Self::read(Self::check(r, what)?, what)?;
        Ok(Some(Jobs { jobs: answer.jobs, stop: Stop::of(&answer.stopping) }))
    }

    /// Reports what a job ended with (the server keeps the first answer).
    pub fn job_result(&self, lease_id: &str, job_id: &str, result: &Value) -> Call<()> {
        let body = wire::JobResult { lease_id: lease_id.to_owned(), job_id: job_id.to_owned(), result: result.clone() };
        Self::check(self.post(&self.short, route::JOB_RESULT, &body), "POST /v1/runner/jobs/result").map(drop)
    }

    /// The private key an `ssh_agent` job loads. It goes only into `ssh-add`'s stdin.
    pub fn ssh_key(&self, lease_id: &str, job_id: &str) -> Call<String> {
        let body = wire::SshKeyAsk { lease_id: lease_id.to_owned(), job_id: job_id.to_owned() };
        let what = "POST /v1/runner/ssh-key";
        let answer: Option<wire::SshKey> =
            Self::read(Self::check(self.post(&self.short, route::SSH_KEY, &body), what)?, what)?;
        match answer {
            Some(k) if !k.private_key.trim().is_empty() => Ok(k.private_key),
            _ => Err(CallError::Refused(format!("{what} answered without a private_key"))),
        }
    }

    /// The credential of a grant the leased session may use, for a command the runner runs under it that
    /// needs `scopes`. It goes only into that command's environment (or the turn's ssh-agent).
    pub fn credential(&self, lease_id: &str, grant_id: &str, scopes: &[wire::Scope]) -> Call<GrantCredential> {
        let body = wire::CredentialAsk {
            lease_id: lease_id.to_owned(),
            grant_id: grant_id.to_owned(),
            scopes: scopes.to_vec(),
        };
        let what = "POST /v1/runner/credential";
        let r = Self::check(self.post(&self.short, route::CREDENTIAL, &body), what)?;
        match serde_json::from_value(r.body) {
            Ok(wire::Credential::Env { env, ttl_s, .. }) => {
                Ok(GrantCredential::Env { vars: env.into_iter().collect(), ttl_s })
            }
            Ok(wire::Credential::Ssh { private_key, ttl_s, .. }) if !private_key.trim().is_empty() => {
                Ok(GrantCredential::Ssh { private_key, ttl_s })
            }
            Ok(wire::Credential::Ssh { .. }) => {
                Err(CallError::Refused(format!("{what} answered an ssh credential without a key")))
            }
            Err(_) => Err(CallError::Refused(format!("{what} answered a credential of an unknown kind"))),
        }
    }

    /// Reports how a command the runner ran under a grant exited: the audit log's record, and the deploy
    /// proof when it exited 0 under a grant covering `deploy`.
    pub fn command(&self, lease_id: &str, grant_id: &str, argv: &[String], exit_code: i32) -> Call<()> {
        let body = wire::CommandReport {
            lease_id: lease_id.to_owned(),
            grant_id: grant_id.to_owned(),
            argv: argv.to_vec(),
            exit_code: exit_code.into(),
        };
        Self::check(self.post(&self.short, route::COMMANDS, &body), "POST /v1/runner/commands").map(drop)
    }

    /// The command criteria of the session's standing goal (none when the server has no such route).
    pub fn criteria(&self, lease_id: &str) -> Call<Vec<String>> {
        let r = self.get_leased(&self.short, route::CRITERIA, lease_id);
        if r.as_ref().is_ok_and(|r| r.status == 404) {
            return Ok(vec![]);
        }
        let what = "GET /v1/runner/criteria";
        let answer: wire::Criteria = Self::read(Self::check(r, what)?, what)?;
        Ok(answer.commands)
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn claims_parse_and_lease_ids_are_escaped() {
        let turn: Turn = serde_json::from_value(json!({"lease_id": "lease_1", "attempt": 2, "session_id": "ses_1",
            "task_id": "ses_1", "message_id": "msg_1", "message": "hi", "history": [{"role": "user", "text": "hi"}],
            "agent": {"name": "Coder"}, "session_token": "sst_x", "session_server": "http://s/v1/session/mcp"}))
        .unwrap();
        assert_eq!((turn.attempt, turn.agent_name(), turn.history[0].text.as_str()), (2, "Coder", "hi"));
        assert!(serde_json::from_value::<Turn>(json!({"lease_id": "l"})).is_err());
        let job: Job =
            serde_json::from_value(json!({"job_id": "job_1", "kind": "run", "command": "make", "extra": 1})).unwrap();
        assert_eq!((job.spec.command.as_deref(), job.spec.timeout_s, job.spec.ttl_s), (Some("make"), None, None));
        assert!(serde_json::from_value::<Job>(json!({"kind": "sync"})).is_err());
        assert_eq!(query_escape("lease_a-b.c~"), "lease_a-b.c~");
        assert_eq!(query_escape("a b&c"), "a%20b%26c");
    }
}
