//! Device sign-in codes (migration 0009): issued to the `sky` CLI, approved or denied in a browser,
//! collected once as a new API key. Every transition is one conditional statement or one atomic batch,
//! so a code is approved at most once and its key minted at most once, however polls and clicks race.

use super::{accounts::NewAccount, first, workspaces, DbResult, Sql};
use crate::stmt;
use serde::Deserialize;

/// A code as issued. Both secrets arrive already hashed.
pub struct NewDeviceCode<'a> {
    pub device_code_id: &'a str,
    pub device_hash: &'a str,
    pub user_code_hash: &'a str,
    pub device_name: &'a str,
    pub interval_ms: i64,
    pub now_ms: i64,
    pub expires_ms: i64,
}

/// Rows a day past their expiry are of no use to anyone: swept whenever a new code is issued.
const SWEEP: &str = "DELETE FROM device_code WHERE expires_ms < ?1";

const INSERT: &str = "INSERT INTO device_code (device_code_id, device_hash, user_code_hash, device_name, status,
    interval_ms, created_ms, expires_ms)
  VALUES (?1, ?2, ?3, ?4, 'pending', ?5, ?6, ?7)";

/// Issues a code. Fails with a unique violation on `device_code.user_code_hash` when the short code
/// collides with another one (callers draw again).
pub async fn create(db: &dyn Sql, d: &NewDeviceCode<'_>, sweep_before_ms: i64) -> DbResult<()> {
    db.batch(vec![
        stmt!(SWEEP, sweep_before_ms),
        stmt!(
            INSERT,
            d.device_code_id,
            d.device_hash,
            d.user_code_hash,
            d.device_name,
            d.interval_ms,
            d.now_ms,
            d.expires_ms
        ),
    ])
    .await
    .map(drop)
}

/// A code still waiting for a person, as the approval page shows it.
#[derive(Debug, Deserialize)]
pub struct Pending {
    pub device_name: String,
    pub expires_ms: i64,
}

const PENDING: &str = "SELECT device_name, expires_ms FROM device_code
  WHERE user_code_hash = ?1 AND status = 'pending' AND expires_ms > ?2";

pub async fn pending(db: &dyn Sql, user_code_hash: &str, now_ms: i64) -> DbResult<Option<Pending>> {
    first(db, stmt!(PENDING, user_code_hash, now_ms)).await
}

#[derive(Deserialize)]
struct Decided {
    device_name: String,
}

const APPROVE: &str = "UPDATE device_code SET status = 'approved', account_id = ?2, scopes = ?3, workspace_id = ?4
  WHERE user_code_hash = ?1 AND status = 'pending' AND expires_ms > ?5 RETURNING device_name";

/// Approves a pending code for an account (its key will get `scopes` and the `workspace_id` lock).
/// Returns the device's name, or `None` when the code is not pending any more.
pub async fn approve(
    db: &dyn Sql,
    user_code_hash: &str,
    account_id: &str,
    scopes: &str,
    workspace_id: Option<&str>,
    now_ms: i64,
) -> DbResult<Option<String>> {
    let row: Option<Decided> =
        first(db, stmt!(APPROVE, user_code_hash, account_id, scopes, workspace_id, now_ms)).await?;
    Ok(row.map(|r| r.device_name))
}

const DENY: &str = "UPDATE device_code SET status = 'denied'
  WHERE user_code_hash = ?1 AND status = 'pending' AND expires_ms > ?2 RETURNING device_name";

/// Denies a pending code; `None` when it is not pending any more.
pub async fn deny(db: &dyn Sql, user_code_hash: &str, now_ms: i64) -> DbResult<Option<String>> {
    let row: Option<Decided> = first(db, stmt!(DENY, user_code_hash, now_ms)).await?;
    Ok(row.map(|r| r.device_name))
}

/// The account is inserted only while the code is still pending. When it is not, no account row exists,
/// so the workspace insert that follows fails its foreign key and the whole batch rolls back: an
/// account is never created without the approval that delivers its only key.
const INSERT_ACCOUNT_IF_PENDING: &str = "INSERT INTO account (account_id, name, email, created_ms)
  SELECT ?1, ?2, ?3, ?4 WHERE EXISTS
    (SELECT 1 FROM device_code WHERE user_code_hash = ?5 AND status = 'pending' AND expires_ms > ?4)";

/// Creates the account and its personal workspace and approves the code for it (read and write, not
/// locked), all or nothing. Fails with a unique violation on `account.email` or `workspace.slug`, and
/// with a foreign key failure when the code stopped being pending.
pub async fn create_account_and_approve(db: &dyn Sql, a: &NewAccount<'_>, user_code_hash: &str) -> DbResult<String> {
    let mut stmts = vec![stmt!(INSERT_ACCOUNT_IF_PENDING, a.account_id, a.name, a.email, a.now_ms, user_code_hash)];
    stmts.extend(workspaces::insert(a.workspace_id, a.slug, a.name, a.account_id, true, a.now_ms));
    stmts.push(stmt!(APPROVE, user_code_hash, a.account_id, "read write", None::<&str>, a.now_ms));
    let mut results = db.batch(stmts).await?;
    let row = results.pop().and_then(|rows| rows.into_iter().next());
    let decided: Option<Decided> = row.map(super::decode).transpose()?;
    decided.map(|d| d.device_name).ok_or_else(|| super::DbError::Other("device code was not pending".into()))
}

crate::rules::params::words! {
    /// Where a device code stands: `pending` → `approved` → `delivered` (its key minted), or `pending` →
    /// `denied`. Expiry is `expires_ms`, not a status.
    pub enum DeviceStatus {
        Pending = "pending",
        Approved = "approved",
        Denied = "denied",
        Delivered = "delivered",
    }
}

/// A code as a poll finds it.
#[derive(Debug, Deserialize)]
pub struct Polled {
    pub status: DeviceStatus,
    pub interval_ms: i64,
    pub expires_ms: i64,
    /// The poll before this one, to tell a CLI that polls too fast to slow down.
    pub prev_poll_ms: Option<i64>,
}

/// Records the poll and returns the code. SQLite evaluates every `SET` expression against the old row,
/// so `prev_poll_ms` receives the previous `last_poll_ms`.
const POLL: &str = "UPDATE device_code SET prev_poll_ms = last_poll_ms, last_poll_ms = ?2 WHERE device_hash = ?1
  RETURNING status, interval_ms, expires_ms, prev_poll_ms";

pub async fn poll(db: &dyn Sql, device_hash: &str, now_ms: i64) -> DbResult<Option<Polled>> {
    first(db, stmt!(POLL, device_hash, now_ms)).await
}

/// The key minted for an approved code.
pub struct NewDeviceKey<'a> {
    pub key_id: &'a str,
    pub key_hash: &'a str,
    pub prefix: &'a str,
    pub now_ms: i64,
}

/// What the CLI is told about its key.
#[derive(Debug, Deserialize)]
pub struct Delivered {
    pub scopes: String,
    pub email: String,
    /// The workspace calls default to: the key's lock, else the personal workspace.
    pub workspace: String,
}

/// Mints the key only while the account holds fewer than `?6` unrevoked keys (the cap of `POST /v1/keys`).
const INSERT_KEY: &str =
    "INSERT INTO api_key (key_id, account_id, name, key_hash, prefix, scopes, workspace_id, created_ms)
  SELECT ?2, d.account_id, d.device_name, ?3, ?4, d.scopes, d.workspace_id, ?5 FROM device_code d
  WHERE d.device_hash = ?1 AND d.status = 'approved'
    AND (SELECT COUNT(*) FROM api_key k WHERE k.account_id = d.account_id AND k.revoked_ms IS NULL) < ?6";
/// Delivered only if the insert just before it minted the key; otherwise the code stays approved, and a
/// poll after a key was revoked collects it.
const MARK_DELIVERED: &str = "UPDATE device_code SET status = 'delivered', key_id = ?2
  WHERE device_hash = ?1 AND status = 'approved' AND changes() = 1";
const STILL_APPROVED: &str = "SELECT 1 AS approved FROM device_code WHERE device_hash = ?1 AND status = 'approved'";
const DELIVERED: &str = "SELECT d.scopes, a.email, w.slug AS workspace
  FROM device_code d JOIN account a ON a.account_id = d.account_id
  JOIN workspace w ON w.workspace_id = COALESCE(d.workspace_id,
    (SELECT p.workspace_id FROM workspace p WHERE p.owner_account_id = d.account_id AND p.is_personal = 1))
  WHERE d.device_hash = ?1 AND d.key_id = ?2";

/// What collecting an approved code's key came to.
#[derive(Debug)]
pub enum Delivery {
    Delivered(Delivered),
    /// The code was not approved (any more): a racing poll collected it, or it was never approved.
    Gone,
    /// Approved, but the account holds the most active keys it may; the code stays approved.
    TooManyKeys,
}

/// Mints the key of an approved code, once: the insert and the status change commit together, so a
/// second poll (or a racing one) finds the code delivered and gets nothing.
pub async fn deliver(db: &dyn Sql, device_hash: &str, k: &NewDeviceKey<'_>, max_active: i64) -> DbResult<Delivery> {
    let mut results = db
        .batch(vec![
            stmt!(INSERT_KEY, device_hash, k.key_id, k.key_hash, k.prefix, k.now_ms, max_active),
            stmt!(MARK_DELIVERED, device_hash, k.key_id),
            stmt!(DELIVERED, device_hash, k.key_id),
            stmt!(STILL_APPROVED, device_hash),
        ])
        .await?;
    let still_approved = results.pop().is_some_and(|rows| !rows.is_empty());
    let delivered = results.pop().and_then(|rows| rows.into_iter().next()).map(super::decode).transpose()?;
    Ok(match (delivered, still_approved) {
        (Some(d), _) => Delivery::Delivered(d),
        (None, true) => Delivery::TooManyKeys,
        (None, false) => Delivery::Gone,
    })
}
