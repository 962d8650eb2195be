//! Idempotency receipts. A claim is one statement that either inserts a `running` receipt (or takes over
//! an expired one) or leaves the live one alone; no read-then-write, so concurrent retries cannot both
//! claim.

use super::{first, DbResult, Sql};
use crate::stmt;
use serde::Deserialize;

pub struct Claim<'a> {
    pub workspace_id: &'a str,
    pub tool: &'a str,
    pub key: &'a str,
    pub fingerprint: &'a str,
    pub reserved: &'a str,
    pub now_ms: i64,
    pub expires_ms: i64,
}

const CLAIM: &str =
    "INSERT INTO receipt (workspace_id, tool, idempotency_key, fingerprint, state, reserved, claimed_ms, expires_ms)
  VALUES (?1, ?2, ?3, ?4, 'running', ?5, ?6, ?7)
  ON CONFLICT (workspace_id, tool, idempotency_key) DO UPDATE SET
    fingerprint = excluded.fingerprint, state = 'running', reserved = excluded.reserved, result = NULL,
    claimed_ms = excluded.claimed_ms, expires_ms = excluded.expires_ms
  WHERE receipt.expires_ms <= excluded.claimed_ms
  RETURNING reserved";

/// `true` when this call now owns the receipt and must do the work.
pub async fn claim(db: &dyn Sql, c: &Claim<'_>) -> DbResult<bool> {
    let row =
        db.all(stmt!(CLAIM, c.workspace_id, c.tool, c.key, c.fingerprint, c.reserved, c.now_ms, c.expires_ms)).await?;
    Ok(!row.is_empty())
}

crate::rules::params::words! {
    /// A receipt's work: `running` (claimed by a call doing it), or `done` with its result kept.
    pub enum ReceiptState {
        Running = "running",
        Done = "done",
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct Receipt {
    pub fingerprint: String,
    pub state: ReceiptState,
    pub reserved: String,
    pub result: Option<String>,
    pub claimed_ms: i64,
}

const GET: &str = "SELECT fingerprint, state, reserved, result, claimed_ms FROM receipt
  WHERE workspace_id = ?1 AND tool = ?2 AND idempotency_key = ?3 AND expires_ms > ?4";

pub async fn get(db: &dyn Sql, workspace_id: &str, tool: &str, key: &str, now_ms: i64) -> DbResult<Option<Receipt>> {
    first(db, stmt!(GET, workspace_id, tool, key, now_ms)).await
}

const TAKE_OVER: &str = "UPDATE receipt SET claimed_ms = ?5
  WHERE workspace_id = ?1 AND tool = ?2 AND idempotency_key = ?3 AND state = 'running' AND claimed_ms = ?4
  RETURNING reserved";

/// Takes over a `running` receipt whose executor went quiet; only one of several callers wins.
pub async fn take_over(
    db: &dyn Sql,
    workspace_id: &str,
    tool: &str,
    key: &str,
    seen_claimed_ms: i64,
    now_ms: i64,
) -> DbResult<bool> {
    Ok(!db.all(stmt!(TAKE_OVER, workspace_id, tool, key, seen_claimed_ms, now_ms)).await?.is_empty())
}

const COMPLETE: &str = "UPDATE receipt SET state = 'done', result = ?4
  WHERE workspace_id = ?1 AND tool = ?2 AND idempotency_key = ?3";

pub async fn complete(db: &dyn Sql, workspace_id: &str, tool: &str, key: &str, result: &str) -> DbResult<()> {
    db.all(stmt!(COMPLETE, workspace_id, tool, key, result)).await.map(drop)
}

const RELEASE: &str =
    "DELETE FROM receipt WHERE workspace_id = ?1 AND tool = ?2 AND idempotency_key = ?3 AND state = 'running'";

/// Forgets a claim whose work failed, so a retry with the same key can try again.
pub async fn release(db: &dyn Sql, workspace_id: &str, tool: &str, key: &str) -> DbResult<()> {
    db.all(stmt!(RELEASE, workspace_id, tool, key)).await.map(drop)
}

const PURGE: &str = "DELETE FROM receipt WHERE expires_ms <= ?1";

/// Deletes expired receipts (run by the cron trigger).
pub async fn purge(db: &dyn Sql, now_ms: i64) -> DbResult<()> {
    db.all(stmt!(PURGE, now_ms)).await.map(drop)
}
