//! Runner jobs, the asking side: the server gives the runner that holds a session's turn a job (sync,
//! run, ssh) and waits, woken through the session's object, for its answer (`runner::jobs` serves the
//! runner's side). A job names its lease: when the runner dies the job dies with it.

use crate::cx::Cx;
use crate::domain::sandboxes;
use crate::error::ApiError;
use crate::rules::ids;
use crate::session::calls;
use crate::store::checkouts::CheckoutStatus;
use crate::store::{self, runners::TurnRow, sessions::SessionRow};
use agentsky_wire::runner::{JobKind, JobSpec};
use serde_json::Value;

/// The most lines of a command's output that are kept (`run_command` shows them all, `land`'s checks
/// fewer).
pub const KEPT_OUTPUT_LINES: usize = 60;

/// What of a command's output may be kept or shown: redacted (whole, so a secret the cut would split is
/// still caught), then its last `lines` lines.
pub fn output_tail(output: &str, lines: usize) -> String {
    let text = crate::rules::redact::redact(output);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// A runner's job result as it is stored: its `output`, if any, as [`output_tail`] keeps it.
pub fn kept_result(mut result: Value) -> String {
    if let Some(output) = result.get("output").and_then(Value::as_str) {
        result["output"] = Value::String(output_tail(output, KEPT_OUTPUT_LINES));
    }
    result.to_string()
}

/// How long a runner's lease on a turn lasts without a heartbeat.
pub const LEASE_MS: i64 = 30_000;

/// What came of asking a session's runner.
#[derive(Debug)]
pub enum Asked<T = Value> {
    /// No runner holds a turn of this session now.
    NoRunner,
    /// The runner did not answer in time, or lost its lease first (said which).
    NoAnswer(String),
    /// The runner's result.
    Done(T),
}

impl Asked {
    /// The result read as its job kind's (`agentsky_wire::runner`'s `RunResult`, `SyncResult`, …), that
    /// type's defaults standing in for what the runner left out.
    pub fn read<T: serde::de::DeserializeOwned + Default>(self) -> Asked<T> {
        match self {
            Asked::NoRunner => Asked::NoRunner,
            Asked::NoAnswer(why) => Asked::NoAnswer(why),
            Asked::Done(v) => Asked::Done(agentsky_wire::runner::read_result(&v)),
        }
    }
}

pub fn wait_key(job_id: &str) -> String {
    format!("job:{job_id}")
}

pub fn poll_key(lease_id: &str) -> String {
    format!("jobs:{lease_id}")
}

/// Waits in the session's object for `key`; `true` when signaled.
pub async fn wait(cx: &Cx<'_>, session_id: &str, key: String, wait_ms: i64) -> Result<bool, ApiError> {
    crate::domain::sessions::call(cx, session_id, calls::Wait { key, wait_ms }).await
}

pub async fn signal(cx: &Cx<'_>, session_id: &str, key: String) -> Result<(), ApiError> {
    crate::domain::sessions::call(cx, session_id, calls::Signal { key }).await
}

/// Queues a job for the runner holding `turn` and wakes its poll; the job's id.
async fn give(cx: &Cx<'_>, turn: &TurnRow, kind: &JobKind, spec: &JobSpec) -> Result<String, ApiError> {
    let job_id = ids::new_id("job");
    store::runners::insert_job(cx.db(), turn, &job_id, kind.as_str(), &spec_text(spec), cx.now_ms).await?;
    signal(cx, &turn.session_id, poll_key(turn.lease_id.as_deref().unwrap_or_default())).await?;
    Ok(job_id)
}

/// A job's spec as it is stored (and sent to the runner as it is).
fn spec_text(spec: &JobSpec) -> String {
    agentsky_wire::runner::to_value(spec).to_string()
}

/// Gives the runner holding `session`'s turn a job (`sync`, `run` with `{command, timeout_s}`, or
/// `ssh_agent` with `{grant_id, ttl_s}`) and waits up to `wait_ms` for its result.
pub async fn ask(
    cx: &Cx<'_>,
    session: &SessionRow,
    kind: JobKind,
    spec: &JobSpec,
    wait_ms: i64,
) -> Result<Asked, ApiError> {
    let db = cx.db();
    let leases = store::runners::live_leases(db, &session.workspace_id, Some(&session.session_id), cx.now_ms).await?;
    let Some(turn) = leases.into_iter().next() else { return Ok(Asked::NoRunner) };
    let job_id = give(cx, &turn, &kind, spec).await?;
    let lease = turn.lease_id.clone().unwrap_or_default();
    let deadline = cx.clock_now() + wait_ms;
    // In slices no longer than a lease, so a runner that died is noticed once its lease runs out. A wait
    // that was not signaled took its slice, so the slices bound the loop.
    for _ in 0..=wait_ms / LEASE_MS + 1 {
        let left = deadline - cx.clock_now();
        if left > 0 {
            wait(cx, &session.session_id, wait_key(&job_id), left.min(LEASE_MS)).await?;
        }
        let job = store::runners::job(db, &job_id).await?;
        if let Some(result) = job.filter(|j| j.status == store::runners::JobStatus::Done).and_then(|j| j.result) {
            return Ok(Asked::Done(serde_json::from_str(&result).unwrap_or(Value::Null)));
        }
        if store::runners::live(db, &lease, cx.clock_now()).await?.is_none() {
            return Ok(Asked::NoAnswer("the runner holding this session's turn went away (its lease ended)".into()));
        }
    }
    Ok(Asked::NoAnswer(format!("the runner did not answer within {} s", wait_ms / 1000)))
}

/// Gives a job to the runner of each turn in `leases` without waiting for answers (`grant_forget`).
pub async fn tell(cx: &Cx<'_>, leases: &[TurnRow], kind: JobKind, spec: &JobSpec) -> Result<(), ApiError> {
    for turn in leases {
        give(cx, turn, &kind, spec).await?;
    }
    Ok(())
}

/// How recently a runner must have called the server to count as online.
pub const ONLINE_MS: i64 = 60_000;
/// How long a checkout may wait for an online runner to take it.
pub const CHECKOUT_TAKE_MS: i64 = 60_000;

/// Gives `session`'s checks to any online runner of its workspace, to run in a fresh checkout of the
/// session's lane (`store::checkouts`), and waits up to `wait_ms` for the result. `NoRunner` when no
/// runner of the workspace is online.
pub async fn ask_checkout(cx: &Cx<'_>, session: &SessionRow, spec: &JobSpec, wait_ms: i64) -> Result<Asked, ApiError> {
    if store::runners::online(cx.db(), &session.workspace_id, cx.clock_now() - ONLINE_MS).await? == 0 {
        return Ok(Asked::NoRunner);
    }
    checkout(cx, session, spec, false, wait_ms).await
}

/// [`ask_checkout`] in the session's hosted sandbox, started for it (no runner of the workspace need be
/// online): its runner claims the session's own checkouts.
pub async fn ask_checkout_in_sandbox(
    cx: &Cx<'_>,
    session: &SessionRow,
    spec: &JobSpec,
    wait_ms: i64,
) -> Result<Asked, ApiError> {
    let s = sandboxes::For {
        workspace_id: &session.workspace_id,
        session_id: &session.session_id,
        harness: &session.harness,
        egress: &[],
    };
    match sandboxes::ensure(cx.env, s, cx.clock_now()).await {
        Ok(sandboxes::Ensured::Full { cap }) => return Ok(Asked::NoAnswer(sandboxes::Ensured::full(cap))),
        Ok(_) => {}
        Err(why) => return Ok(Asked::NoAnswer(format!("the session's sandbox did not start: {why}"))),
    }
    checkout(cx, session, spec, true, wait_ms).await
}

/// Queues a checkout of the session's lane, for people's runners or for the session's sandbox (`hosted`),
/// and waits for a runner's result.
async fn checkout(
    cx: &Cx<'_>,
    session: &SessionRow,
    spec: &JobSpec,
    hosted: bool,
    wait_ms: i64,
) -> Result<Asked, ApiError> {
    let db = cx.db();
    let job_id = ids::new_id("job");
    let (ws, sid) = (&session.workspace_id, &session.session_id);
    store::checkouts::insert(db, &job_id, ws, sid, &spec_text(spec), hosted, cx.now_ms).await?;
    let deadline = cx.clock_now() + wait_ms;
    // In slices no longer than a lease: a result wakes the wait, the slices see runners go away.
    for _ in 0..=wait_ms / LEASE_MS + 1 {
        let left = deadline - cx.clock_now();
        if left > 0 {
            wait(cx, &session.session_id, wait_key(&job_id), left.min(LEASE_MS)).await?;
        }
        let job = store::checkouts::get(db, &job_id).await?.ok_or_else(|| ApiError::cause("checkout vanished"))?;
        match progress(&job, cx.clock_now()) {
            Progress::Done(v) => return Ok(Asked::Done(v)),
            Progress::GiveUp(why) => return give_up(cx, &job_id, why).await,
            Progress::Waiting if cx.clock_now() >= deadline => break,
            Progress::Waiting => {}
        }
    }
    give_up(cx, &job_id, format!("no runner answered within {} s", wait_ms / 1000)).await
}

/// Ends a checkout nobody will answer, so no runner takes it later.
async fn give_up(cx: &Cx<'_>, job_id: &str, why: String) -> Result<Asked, ApiError> {
    store::checkouts::abandon(cx.db(), job_id, &why, cx.clock_now()).await?;
    Ok(Asked::NoAnswer(why))
}

/// How many runners may take a checkout in turn (each one that went away leaves it to the next).
pub const CHECKOUT_ATTEMPTS: i64 = 3;

/// Where a checkout stands for the one waiting on it.
#[derive(Debug, PartialEq)]
pub enum Progress {
    /// Its runner's result.
    Done(Value),
    /// Queued, or running under a lease (lapsed ones included, until another runner may take them).
    Waiting,
    /// Nobody will run it: why.
    GiveUp(String),
}

/// The one rule for waiting on a checkout. A runner that went away leaves its checkout claimable once its
/// lease lapsed, and the next runner runs it again; a checkout no runner takes within
/// [`CHECKOUT_TAKE_MS`] (queued, or lapsed), or whose runners went away [`CHECKOUT_ATTEMPTS`] times, is
/// given up, saying so.
pub fn progress(job: &store::checkouts::CheckoutRow, now_ms: i64) -> Progress {
    let take_s = CHECKOUT_TAKE_MS / 1000;
    match job.status {
        CheckoutStatus::Done => Progress::Done(job.result.as_deref().and_then(|r| serde_json::from_str(r).ok()).unwrap_or(Value::Null)),
        CheckoutStatus::Queued if now_ms - job.created_ms >= CHECKOUT_TAKE_MS => {
            Progress::GiveUp(format!("no runner of the workspace took the checkout within {take_s} s"))
        }
        CheckoutStatus::Leased => match job.lease_expires_ms.filter(|t| *t < now_ms).map(|t| now_ms - t) {
            Some(_) if job.attempts >= CHECKOUT_ATTEMPTS => Progress::GiveUp(format!(
                "the runners that took the checkout went away {} times (their leases ended)",
                job.attempts
            )),
            Some(lapsed_ms) if lapsed_ms >= CHECKOUT_TAKE_MS => Progress::GiveUp(format!(
                "the runner running the checkout went away (its lease ended) and no other runner took it within {take_s} s"
            )),
            _ => Progress::Waiting,
        },
        CheckoutStatus::Queued => Progress::Waiting,
    }
}

/// How long a finished checkout's row is kept.
const CHECKOUT_KEEP_MS: i64 = 24 * 3_600_000;

/// The cron's sweep of checkouts done for more than a day; how many went.
pub async fn forget_done_checkouts(cx: &Cx<'_>) -> Result<usize, ApiError> {
    Ok(store::checkouts::forget_done(cx.db(), cx.now_ms - CHECKOUT_KEEP_MS).await?)
}
