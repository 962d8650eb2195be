//! Runner jobs: the server asking the runner that holds a session's turn to act in that turn's working
//! folder, and waiting for its answer. `land` asks it to `sync` (upload the agent's changes, take the
//! base's newer files) and to `run` the task's checks; `get_credential` asks it to load an SSH key into
//! the turn's `ssh_agent` and answers with the agent's socket.
//!
//! - `POST /v1/runner/jobs {lease_id, wait_seconds?, seen?}` → `{jobs: [{job_id, kind, …spec}], stop}`:
//!   the lease's jobs without a result and not in `seen`, waiting (woken, not polled) up to 25 s for one;
//! - `POST /v1/runner/jobs/result {lease_id, job_id, result}` → the result, written once;
//! - `POST /v1/runner/ssh-key {lease_id, job_id}` → `{private_key}` of an `ssh_agent` job's live grant,
//!   handed out once, recorded in the audit log; an `ssh_forget` job (a revoked ssh grant) ends the
//!   turn's ssh-agent with every key it held;
//! - `GET /v1/runner/criteria?lease_id=` → `{commands}`: the standing goal's command criteria, which the
//!   runner runs at the turn's end and reports with its final events (`checks`).
//!
//! A job names its lease: when the runner dies the job dies with it, and the asking call says so.

use super::{body, leased, ok, LEASE_MS};
use crate::agent::Credential;
use crate::cx::Cx;
use crate::error::{ApiError, Code};
use crate::http::{HttpRequest, HttpResponse};
use crate::rules::{ids, limits};
use crate::session::{SessionCall, SessionReply};
use crate::store::{self, runners::RunnerRow, runners::TurnRow, sessions::SessionRow};
use serde::Deserialize;
use serde_json::{json, Value};

const MAX_POLL_WAIT_S: i64 = 25;
const MAX_RESULT_BYTES: usize = 64 * 1024;

/// What came of asking a session's runner.
#[derive(Debug)]
pub enum Asked {
    /// No runner holds a turn of this session now.
    NoRunner,
    /// The runner did not answer in time, or lost its lease first (said which).
    NoAnswer(String),
    /// The runner's result.
    Done(Value),
}

fn wait_key(job_id: &str) -> String {
    format!("job:{job_id}")
}

fn poll_key(lease_id: &str) -> String {
    format!("jobs:{lease_id}")
}

/// Waits in the session's object for `key`; `true` when signaled.
async fn wait(cx: &Cx<'_>, session_id: &str, key: String, wait_ms: i64) -> Result<bool, ApiError> {
    match crate::ops::sessions::call(cx, session_id, SessionCall::Wait { key, wait_ms }).await? {
        SessionReply::Woken { signaled } => Ok(signaled),
        other => Err(cx.internal(format!("unexpected session reply {other:?}"))),
    }
}

async fn signal(cx: &Cx<'_>, session_id: &str, key: String) -> Result<(), ApiError> {
    crate::ops::sessions::call(cx, session_id, SessionCall::Signal { key }).await.map(drop)
}

/// Queues a job for the runner holding `turn` and wakes its poll; the job's id.
async fn give(cx: &Cx<'_>, turn: &TurnRow, kind: &str, spec: &Value) -> Result<String, ApiError> {
    let job_id = ids::new_id("job");
    store::runners::insert_job(cx.db(), turn, &job_id, kind, &spec.to_string(), cx.now_ms)
        .await
        .map_err(|e| cx.internal(e))?;
    signal(cx, &turn.session_id, poll_key(turn.lease_id.as_deref().unwrap_or_default())).await?;
    Ok(job_id)
}

/// Gives the runner holding `session`'s turn a job (`sync`, `run` with `{command, timeout_s}`, or
/// `ssh_agent` with `{grant_id, ttl_s}`) and waits up to `wait_ms` for its result.
pub async fn ask(cx: &Cx<'_>, session: &SessionRow, kind: &str, spec: Value, wait_ms: i64) -> Result<Asked, ApiError> {
    let db = cx.db();
    let leases = store::runners::live_leases(db, &session.workspace_id, Some(&session.session_id), cx.now_ms)
        .await
        .map_err(|e| cx.internal(e))?;
    let Some(turn) = leases.into_iter().next() else { return Ok(Asked::NoRunner) };
    let job_id = give(cx, &turn, kind, &spec).await?;
    let lease = turn.lease_id.clone().unwrap_or_default();
    let deadline = cx.clock_now() + wait_ms;
    // In slices no longer than a lease, so a runner that died is noticed once its lease runs out. A wait
    // that was not signaled took its slice, so the slices bound the loop.
    for _ in 0..=wait_ms / LEASE_MS + 1 {
        let left = deadline - cx.clock_now();
        if left > 0 {
            wait(cx, &session.session_id, wait_key(&job_id), left.min(LEASE_MS)).await?;
        }
        let job = store::runners::job(db, &job_id).await.map_err(|e| cx.internal(e))?;
        if let Some(result) = job.filter(|j| j.status == "done").and_then(|j| j.result) {
            return Ok(Asked::Done(serde_json::from_str(&result).unwrap_or(Value::Null)));
        }
        if store::runners::by_lease(db, &lease, cx.clock_now()).await.map_err(|e| cx.internal(e))?.is_none() {
            return Ok(Asked::NoAnswer("the runner holding this session's turn went away (its lease ended)".into()));
        }
    }
    Ok(Asked::NoAnswer(format!("the runner did not answer within {} s", wait_ms / 1000)))
}

/// Gives a job to the runner of each turn in `leases` without waiting for answers (`ssh_forget`).
pub async fn tell(cx: &Cx<'_>, leases: &[TurnRow], kind: &str, spec: Value) -> Result<(), ApiError> {
    for turn in leases {
        give(cx, turn, kind, &spec).await?;
    }
    Ok(())
}

fn job_view(j: &store::runners::JobRow) -> Value {
    let mut v = serde_json::from_str::<Value>(&j.spec).ok().filter(Value::is_object).unwrap_or_else(|| json!({}));
    v["job_id"] = json!(j.job_id);
    v["kind"] = json!(j.kind);
    v
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Poll {
    lease_id: String,
    wait_seconds: Option<i64>,
    #[serde(default)]
    seen: Vec<String>,
}

/// `POST /v1/runner/jobs`
pub async fn poll(cx: &Cx<'_>, runner: &RunnerRow, req: &HttpRequest) -> Result<HttpResponse, ApiError> {
    let p: Poll = body(req)?;
    let wait_s = p.wait_seconds.unwrap_or(0);
    if !(0..=MAX_POLL_WAIT_S).contains(&wait_s) {
        return Err(ApiError::invalid(format!("`wait_seconds` must be between 0 and {MAX_POLL_WAIT_S}")));
    }
    limits::count("seen", p.seen.len(), 100)?;
    let turn = leased(cx, runner, &p.lease_id).await?;
    let fresh = |jobs: Vec<store::runners::JobRow>| -> Vec<Value> {
        jobs.iter().filter(|j| !p.seen.contains(&j.job_id)).map(job_view).collect()
    };
    let open = || store::runners::open_jobs(cx.db(), &p.lease_id);
    let mut jobs = fresh(open().await.map_err(|e| cx.internal(e))?);
    if jobs.is_empty() && wait_s > 0 {
        wait(cx, &turn.session_id, poll_key(&p.lease_id), wait_s * 1000).await?;
        jobs = fresh(open().await.map_err(|e| cx.internal(e))?);
    }
    let stop = super::stopped(cx, &turn.session_id).await?;
    Ok(ok(json!({ "jobs": jobs, "stop": stop })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JobResult {
    lease_id: String,
    job_id: String,
    result: Value,
}

/// The lease's job `job_id`, or not found.
async fn job_of(
    cx: &Cx<'_>,
    runner: &RunnerRow,
    lease_id: &str,
    job_id: &str,
) -> Result<store::runners::JobRow, ApiError> {
    leased(cx, runner, lease_id).await?;
    let job = store::runners::job(cx.db(), job_id).await.map_err(|e| cx.internal(e))?;
    job.filter(|j| j.lease_id == lease_id).ok_or_else(|| ApiError::not_found(&format!("job {job_id}")))
}

/// `POST /v1/runner/jobs/result`
pub async fn result(cx: &Cx<'_>, runner: &RunnerRow, req: &HttpRequest) -> Result<HttpResponse, ApiError> {
    let p: JobResult = body(req)?;
    let text = p.result.to_string();
    if text.len() > MAX_RESULT_BYTES {
        return Err(ApiError::new(Code::PayloadTooLarge, "a job result holds at most 64 KiB"));
    }
    let job = job_of(cx, runner, &p.lease_id, &p.job_id).await?;
    // A retried post whose first answer was lost finds the result written: accepted, unchanged.
    if store::runners::finish_job(cx.db(), &job.job_id, &p.lease_id, &text, cx.now_ms)
        .await
        .map_err(|e| cx.internal(e))?
    {
        signal(cx, &job.session_id, wait_key(&job.job_id)).await?;
    }
    Ok(ok(json!({ "ok": true })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyRequest {
    lease_id: String,
    job_id: String,
}

/// `POST /v1/runner/ssh-key`: the key of an `ssh_agent` job's grant, for the runner's ssh-agent only.
pub async fn ssh_key(cx: &Cx<'_>, runner: &RunnerRow, req: &HttpRequest) -> Result<HttpResponse, ApiError> {
    let p: KeyRequest = body(req)?;
    let job = job_of(cx, runner, &p.lease_id, &p.job_id).await?;
    let db = cx.db();
    let refused = |why: &str| ApiError::new(Code::Forbidden, why.to_owned());
    if job.kind != "ssh_agent" {
        return Err(refused("only an ssh_agent job has a key"));
    }
    if !store::runners::serve_key(db, &job.job_id, &p.lease_id).await.map_err(|e| cx.internal(e))? {
        return Err(refused("this job's key was already handed out"));
    }
    let spec: Value = serde_json::from_str(&job.spec).unwrap_or_default();
    let grant_id = spec["grant_id"].as_str().unwrap_or_default();
    let grant = store::requests::get_grant(db, grant_id).await.map_err(|e| cx.internal(e))?;
    let grant = grant
        .filter(|g| g.workspace_id == job.workspace_id && crate::agent::grant_is_live(g, cx.now_ms))
        .ok_or_else(|| refused("the grant is no longer active"))?;
    let cred = crate::agent::open_credential(cx, &grant).await?;
    let cred = cred.ok_or_else(|| refused("the target's credentials cannot be opened; reconnect it"))?;
    let Credential::Ssh { private_key } = cred else {
        return Err(refused("the target's credential is not an SSH key"));
    };
    let detail = format!("into the ssh-agent of runner {}", runner.name);
    store::audit::record(
        db,
        &store::audit::Entry::grant(&grant, &job.session_id, "ssh_key_loaded", &detail, cx.now_ms),
    )
    .await
    .map_err(|e| cx.internal(e))?;
    Ok(ok(json!({ "private_key": private_key })))
}

/// `GET /v1/runner/criteria`: the goal's command criteria, for the runner to run at the turn's end.
pub async fn criteria(cx: &Cx<'_>, runner: &RunnerRow, req: &HttpRequest) -> Result<HttpResponse, ApiError> {
    let lease_id = req.query_param("lease_id").ok_or_else(|| ApiError::invalid("`lease_id` is required"))?;
    let turn = leased(cx, runner, &lease_id).await?;
    let goal = match crate::ops::sessions::call(cx, &turn.session_id, SessionCall::GetGoal).await? {
        SessionReply::Goal { goal } => goal,
        _ => None,
    };
    let commands: Vec<String> = goal
        .filter(|g| g.status == crate::session::goal::GoalStatus::Active)
        .map(|g| g.criteria.iter().filter_map(|c| c.command.clone()).collect())
        .unwrap_or_default();
    Ok(ok(json!({ "commands": commands })))
}
