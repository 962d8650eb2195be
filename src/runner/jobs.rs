//! Runner jobs: the server asking the runner that holds a session's turn to act in that turn's working
//! folder, and waiting for its answer. `land` asks it to `sync` (upload the agent's changes, take the
//! base's newer files) and to `run` the task's checks; `get_credential` asks it to load an SSH key into
//! the turn's `ssh_agent` and answers with the agent's socket.
//!
//! - `POST /v1/runner/jobs {lease_id, wait_seconds?, seen?}` → `{jobs: [{job_id, kind, …spec}], stop}`:
//!   the lease's jobs without a result and not in `seen`, waiting (woken, not polled) up to 25 s for one;
//! - `POST /v1/runner/jobs/result {lease_id, job_id, result}` → the result, written once;
//! - `POST /v1/runner/ssh-key {lease_id, job_id}` → `{private_key}` of an `ssh_agent` job's live grant,
//!   handed out once, recorded in the audit log; a `grant_forget` job (a revoked grant) ends the commands
//!   the runner runs under that grant and, for an ssh grant, the turn's ssh-agent with every key it held;
//!   a `push` job (from `land`) pushes the task's base to its git remote (`crate::agent` `pushing`);
//! - `GET /v1/runner/criteria?lease_id=` → `{commands}`: the standing goal's command criteria, which the
//!   runner runs at the turn's end and reports with its final events (`checks`).
//!
//! A job names its lease: when the runner dies the job dies with it, and the asking call says so.

use super::{body, leased, ok, Stopping};
use crate::cx::Cx;
use crate::domain::grants::{self, Credential};
use crate::domain::jobs::{poll_key, signal, wait, wait_key};
use crate::error::{ApiError, Code};
use crate::http::{HttpRequest, HttpResponse};
use crate::session::calls;
use crate::store::{self, runners::RunnerRow};
use agentsky_wire::runner as wire;
use serde_json::Value;

const MAX_RESULT_BYTES: usize = 64 * 1024;

/// A stored job as the runner reads it: its id, its kind and its spec.
fn job_view(j: &store::runners::JobRow) -> wire::Job {
    let kind = serde_json::from_value(Value::String(j.kind.clone())).unwrap_or(wire::JobKind::Other(j.kind.clone()));
    wire::Job { job_id: j.job_id.clone(), kind, spec: serde_json::from_str(&j.spec).unwrap_or_default() }
}

/// What a poll answers: the jobs, and whether the command must end.
fn jobs_answer(jobs: Vec<wire::Job>, stopping: Stopping) -> HttpResponse {
    ok(&wire::JobsAnswer { jobs, stopping })
}

/// `POST /v1/runner/jobs`
pub async fn poll(cx: &Cx<'_>, runner: &RunnerRow, req: &HttpRequest) -> Result<HttpResponse, ApiError> {
    let p: wire::PollJobs = body(req)?;
    let wait_s = p.wait_seconds.unwrap_or(0);
    if super::cancelled(cx, runner, &p.lease_id).await? {
        return Ok(jobs_answer(vec![], Stopping::cancelled()));
    }
    let turn = leased(cx, runner, &p.lease_id).await?;
    let fresh = |jobs: Vec<store::runners::JobRow>| -> Vec<wire::Job> {
        jobs.iter().filter(|j| !p.seen.contains(&j.job_id)).map(job_view).collect()
    };
    let open = || store::runners::open_jobs(cx.db(), &p.lease_id);
    let mut jobs = fresh(open().await?);
    if jobs.is_empty() && wait_s > 0 {
        wait(cx, &turn.session_id, poll_key(&p.lease_id), wait_s * 1000).await?;
        jobs = fresh(open().await?);
        // Woken by a cancel: the turn is over.
        if super::cancelled(cx, runner, &p.lease_id).await? {
            return Ok(jobs_answer(vec![], Stopping::cancelled()));
        }
    }
    Ok(jobs_answer(jobs, Stopping::session(super::stopped(cx, &turn.session_id).await?)))
}

/// The lease's job `job_id`, or not found.
async fn job_of(
    cx: &Cx<'_>,
    runner: &RunnerRow,
    lease_id: &str,
    job_id: &str,
) -> Result<store::runners::JobRow, ApiError> {
    leased(cx, runner, lease_id).await?;
    let job = store::runners::job(cx.db(), job_id).await?;
    job.filter(|j| j.lease_id == lease_id).ok_or_else(|| ApiError::not_found(&format!("job {job_id}")))
}

/// `POST /v1/runner/jobs/result`
pub async fn result(cx: &Cx<'_>, runner: &RunnerRow, req: &HttpRequest) -> Result<HttpResponse, ApiError> {
    let p: wire::JobResult = body(req)?;
    let text = p.result.to_string();
    if text.len() > MAX_RESULT_BYTES {
        return Err(ApiError::new(Code::PayloadTooLarge, "a job result holds at most 64 KiB"));
    }
    // Output is kept as it is shown: redacted, its tail only.
    let text = crate::domain::jobs::kept_result(p.result);
    let db = cx.db();
    if let Some(c) = store::checkouts::held(db, &runner.runner_id, &p.lease_id).await? {
        if c.job_id != p.job_id {
            return Err(ApiError::not_found(&format!("job {}", p.job_id)));
        }
        if store::checkouts::finish(db, &runner.runner_id, &p.lease_id, &text, cx.now_ms).await? {
            signal(cx, &c.session_id, wait_key(&c.job_id)).await?;
        }
        return Ok(ok(&wire::Accepted { ok: true }));
    }
    // A retried post of a checkout's result whose first answer was lost: accepted, unchanged.
    let answered = store::checkouts::get(db, &p.job_id).await?.filter(|c| {
        c.status == store::checkouts::CheckoutStatus::Done
            && c.lease_id.as_deref() == Some(p.lease_id.as_str())
            && c.runner_id.as_deref() == Some(runner.runner_id.as_str())
    });
    if answered.is_some() {
        return Ok(ok(&wire::Accepted { ok: true }));
    }
    let job = job_of(cx, runner, &p.lease_id, &p.job_id).await?;
    // A retried post whose first answer was lost finds the result written: accepted, unchanged.
    if store::runners::finish_job(cx.db(), &job.job_id, &p.lease_id, &text, cx.now_ms).await? {
        signal(cx, &job.session_id, wait_key(&job.job_id)).await?;
    }
    Ok(ok(&wire::Accepted { ok: true }))
}

/// `POST /v1/runner/ssh-key`: the key of an `ssh_agent` job's grant, for the runner's ssh-agent only.
pub async fn ssh_key(cx: &Cx<'_>, runner: &RunnerRow, req: &HttpRequest) -> Result<HttpResponse, ApiError> {
    let p: wire::SshKeyAsk = body(req)?;
    let job = job_of(cx, runner, &p.lease_id, &p.job_id).await?;
    let db = cx.db();
    let refused = |why: &str| ApiError::new(Code::Forbidden, why.to_owned());
    if job.kind != "ssh_agent" {
        return Err(refused("only an ssh_agent job has a key"));
    }
    if !store::runners::serve_key(db, &job.job_id, &p.lease_id).await? {
        return Err(refused("this job's key was already handed out"));
    }
    let spec: wire::JobSpec = serde_json::from_str(&job.spec).unwrap_or_default();
    let grant = store::requests::get_grant(db, spec.grant_id.as_deref().unwrap_or_default()).await?;
    let grant = grant
        .filter(|g| g.workspace_id == job.workspace_id && grants::live(g, cx.now_ms))
        .ok_or_else(|| refused("the grant is no longer active"))?;
    let cred = grants::open_credential(cx, &grant).await?;
    let cred = cred.ok_or_else(|| refused("the target's credentials cannot be opened; reconnect it"))?;
    let Credential::Ssh { private_key } = cred else {
        return Err(refused("the target's credential is not an SSH key"));
    };
    let detail = format!("into the ssh-agent of runner {}", runner.name);
    store::audit::record(
        db,
        &store::audit::Entry::grant(&grant, &job.session_id, "ssh_key_loaded", &detail, cx.now_ms),
    )
    .await?;
    Ok(ok(&wire::SshKey { private_key }))
}

/// `GET /v1/runner/criteria`: the goal's command criteria, for the runner to run at the turn's end.
pub async fn criteria(cx: &Cx<'_>, runner: &RunnerRow, req: &HttpRequest) -> Result<HttpResponse, ApiError> {
    let lease_id = req.query_param("lease_id").ok_or_else(|| ApiError::invalid("`lease_id` is required"))?;
    let turn = leased(cx, runner, &lease_id).await?;
    let goal = crate::domain::sessions::call(cx, &turn.session_id, calls::GetGoal {}).await?;
    let commands: Vec<String> = goal
        .filter(|g| g.status == crate::session::goal::GoalStatus::Active)
        .map(|g| g.criteria.iter().filter_map(|c| c.command.clone()).collect())
        .unwrap_or_default();
    Ok(ok(&wire::Criteria { commands }))
}
