//! Checkouts: checks run for a session by any runner of its workspace (not the one holding the session's
//! turn, which may be gone), in a fresh checkout of the session's lane. A runner claims one with a lease,
//! renews it while the command runs and answers once; a runner that stops renewing loses it to the next
//! ([`super::lease`]).

use super::lease::{queue, Claimant, Queue};
use super::{first, DbResult, Sql};
use crate::stmt;
use serde::Deserialize;

crate::rules::params::words! {
    /// Where a checkout stands: `queued`, `leased` by a runner running it, then `done` with its result.
    pub enum CheckoutStatus {
        Queued = "queued",
        Leased = "leased",
        Done = "done",
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct CheckoutRow {
    pub job_id: String,
    pub workspace_id: String,
    pub session_id: String,
    /// `{command, timeout_s}`.
    pub spec: String,
    pub status: CheckoutStatus,
    pub runner_id: Option<String>,
    pub lease_id: Option<String>,
    pub lease_expires_ms: Option<i64>,
    /// How many times a runner took it (a runner that went away leaves it to the next).
    pub attempts: i64,
    pub result: Option<String>,
    pub created_ms: i64,
}

/// Queues a checkout once (a caller that names its job by what it asks may ask again).
pub async fn insert(
    db: &dyn Sql,
    job_id: &str,
    workspace_id: &str,
    session_id: &str,
    spec: &str,
    hosted: bool,
    now_ms: i64,
) -> DbResult<()> {
    const INSERT: &str =
        "INSERT INTO runner_checkout (job_id, workspace_id, session_id, spec, status, created_ms, hosted)
      VALUES (?1, ?2, ?3, ?4, 'queued', ?5, ?6) ON CONFLICT (job_id) DO NOTHING";
    db.all(stmt!(INSERT, job_id, workspace_id, session_id, spec, now_ms, hosted)).await.map(drop)
}

const QUEUE: Queue = queue!(
    "runner_checkout",
    "job_id, workspace_id, session_id, spec, status, runner_id, lease_id, lease_expires_ms, attempts, result,
     created_ms",
    // A person's runner: any checkout queued for people's runners; a sandbox's: its own session's queued
    // for it.
    claims: "CASE WHEN ?6 IS NULL THEN hosted = 0 ELSE session_id = ?6 AND hosted = 1 END",
    done_sets: ", result = ?3, done_ms = ?4"
);

/// Leases the oldest checkout of the workspace that is waiting, or whose runner stopped renewing it: for a
/// person's runner any queued for people's runners, for a sandbox's its own session's queued for it.
pub async fn claim(
    db: &dyn Sql,
    runner: &Claimant<'_>,
    lease_id: &str,
    lease_ms: i64,
    now_ms: i64,
) -> DbResult<Option<CheckoutRow>> {
    QUEUE.claim(db, runner, lease_id, lease_ms, now_ms).await
}

/// The checkout `runner_id` holds under `lease_id` (lapsed or not, until another runner takes it over).
pub async fn held(db: &dyn Sql, runner_id: &str, lease_id: &str) -> DbResult<Option<CheckoutRow>> {
    QUEUE.held(db, runner_id, lease_id).await
}

pub async fn get(db: &dyn Sql, job_id: &str) -> DbResult<Option<CheckoutRow>> {
    const GET: &str = "SELECT job_id, workspace_id, session_id, spec, status, runner_id, lease_id, lease_expires_ms,
        attempts, result, created_ms FROM runner_checkout WHERE job_id = ?1";
    first(db, stmt!(GET, job_id)).await
}

/// Extends a held lease; `false` when another runner took the checkout over or it ended.
pub async fn renew(db: &dyn Sql, runner_id: &str, lease_id: &str, until_ms: i64) -> DbResult<bool> {
    QUEUE.renew(db, runner_id, lease_id, until_ms).await
}

/// Writes a checkout's result once, under the lease `runner_id` holds; `false` when the lease is no longer
/// held (another runner took the checkout over, or this result was written already: a retried post).
pub async fn finish(db: &dyn Sql, runner_id: &str, lease_id: &str, result: &str, now_ms: i64) -> DbResult<bool> {
    QUEUE.finish(db, runner_id, lease_id, vec![result.into(), now_ms.into()]).await
}

/// Ends a checkout nobody answered, so no runner takes it later.
pub async fn abandon(db: &dyn Sql, job_id: &str, why: &str, now_ms: i64) -> DbResult<()> {
    const GIVE_UP: &str = "UPDATE runner_checkout SET status = 'done', result = ?2, done_ms = ?3
      WHERE job_id = ?1 AND status <> 'done'";
    let result = serde_json::json!({ "error": why }).to_string();
    db.all(stmt!(GIVE_UP, job_id, result, now_ms)).await.map(drop)
}

/// Deletes checkouts that ended before `before_ms` (their waiter read the result long since); how many.
pub async fn forget_done(db: &dyn Sql, before_ms: i64) -> DbResult<usize> {
    const FORGET: &str = "DELETE FROM runner_checkout WHERE status = 'done' AND done_ms < ?1 RETURNING job_id";
    Ok(db.all(stmt!(FORGET, before_ms)).await?.len())
}
