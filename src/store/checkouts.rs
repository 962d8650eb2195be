//! Checkouts: checks run for a session by any runner of its workspace (not the one holding the session's
//! turn, which may be gone), in a fresh checkout of the session's lane. A runner claims one with a lease,
//! renews it while the command runs and answers once; a runner that stops renewing loses it to the next.

use super::{first, DbResult, Sql};
use crate::stmt;
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
pub struct CheckoutRow {
    pub job_id: String,
    pub workspace_id: String,
    pub session_id: String,
    /// `{command, timeout_s}`.
    pub spec: String,
    pub status: String,
    pub runner_id: Option<String>,
    pub lease_id: Option<String>,
    pub lease_expires_ms: Option<i64>,
    pub result: Option<String>,
}

pub async fn insert(
    db: &dyn Sql,
    job_id: &str,
    workspace_id: &str,
    session_id: &str,
    spec: &str,
    now_ms: i64,
) -> DbResult<()> {
    const INSERT: &str = "INSERT INTO runner_checkout (job_id, workspace_id, session_id, spec, status, created_ms)
      VALUES (?1, ?2, ?3, ?4, 'queued', ?5)";
    db.all(stmt!(INSERT, job_id, workspace_id, session_id, spec, now_ms)).await.map(drop)
}

/// Leases the oldest checkout of the workspace that is waiting, or whose runner stopped renewing it.
pub async fn claim(
    db: &dyn Sql,
    workspace_id: &str,
    runner_id: &str,
    lease_id: &str,
    lease_ms: i64,
    now_ms: i64,
) -> DbResult<Option<CheckoutRow>> {
    const CLAIM: &str =
        "UPDATE runner_checkout SET status = 'leased', runner_id = ?2, lease_id = ?3, lease_expires_ms = ?4 + ?5
      WHERE rowid = (SELECT rowid FROM runner_checkout WHERE workspace_id = ?1
                       AND (status = 'queued' OR (status = 'leased' AND lease_expires_ms < ?4))
                     ORDER BY created_ms LIMIT 1)
      RETURNING job_id, workspace_id, session_id, spec, status, runner_id, lease_id, lease_expires_ms, result";
    first(db, stmt!(CLAIM, workspace_id, runner_id, lease_id, now_ms, lease_ms)).await
}

/// The checkout a live lease of `runner_id` holds.
pub async fn by_lease(db: &dyn Sql, runner_id: &str, lease_id: &str, now_ms: i64) -> DbResult<Option<CheckoutRow>> {
    const GET: &str = "SELECT job_id, workspace_id, session_id, spec, status, runner_id, lease_id, lease_expires_ms, result FROM runner_checkout
      WHERE lease_id = ?1 AND runner_id = ?2 AND status = 'leased' AND lease_expires_ms >= ?3";
    first(db, stmt!(GET, lease_id, runner_id, now_ms)).await
}

pub async fn get(db: &dyn Sql, job_id: &str) -> DbResult<Option<CheckoutRow>> {
    const GET: &str = "SELECT job_id, workspace_id, session_id, spec, status, runner_id, lease_id, lease_expires_ms, result FROM runner_checkout WHERE job_id = ?1";
    first(db, stmt!(GET, job_id)).await
}

pub async fn renew(db: &dyn Sql, lease_id: &str, until_ms: i64) -> DbResult<()> {
    const RENEW: &str = "UPDATE runner_checkout SET lease_expires_ms = ?2 WHERE lease_id = ?1 AND status = 'leased'";
    db.all(stmt!(RENEW, lease_id, until_ms)).await.map(drop)
}

/// Writes a checkout's result once, under its lease; `false` when it had one already (a retried post).
pub async fn finish(db: &dyn Sql, job_id: &str, lease_id: &str, result: &str, now_ms: i64) -> DbResult<bool> {
    const DONE: &str = "UPDATE runner_checkout SET status = 'done', result = ?3, done_ms = ?4
      WHERE job_id = ?1 AND lease_id = ?2 AND status = 'leased' RETURNING job_id";
    Ok(!db.all(stmt!(DONE, job_id, lease_id, result, now_ms)).await?.is_empty())
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
