//! Routines and their fires.

use super::{first, rows, DbResult, Sql};
use crate::stmt;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RoutineRow {
    pub routine_id: String,
    #[serde(skip_serializing, default)]
    pub workspace_id: String,
    pub name: String,
    /// Each fire starts a new session of this agent…
    pub agent_id: Option<String>,
    /// …or sends `message` into this session.
    pub session_id: Option<String>,
    pub message: String,
    /// 5-field cron in `timezone`; `null`: only when `run_routine` fires it.
    pub cron: Option<String>,
    pub timezone: String,
    /// Cap on each run's spend, in cents.
    pub budget_cents: Option<i64>,
    #[serde(deserialize_with = "super::int_bool")]
    pub enabled: bool,
    /// When the cron trigger next fires it; `null` when paused or without `cron`.
    pub next_fire_ms: Option<i64>,
    pub created_ms: i64,
}

pub struct NewRoutine<'a> {
    pub routine_id: &'a str,
    pub workspace_id: &'a str,
    pub name: &'a str,
    pub agent_id: Option<&'a str>,
    pub session_id: Option<&'a str>,
    pub message: &'a str,
    pub cron: Option<&'a str>,
    pub timezone: &'a str,
    pub budget_cents: Option<i64>,
    pub next_fire_ms: Option<i64>,
    pub key_id: Option<&'a str>,
    pub now_ms: i64,
}

const INSERT: &str = "INSERT INTO routine (routine_id, workspace_id, name, agent_id, session_id, message, cron, timezone,
    budget_cents, next_fire_ms, created_by_key_id, created_ms)
  VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
  RETURNING routine_id, workspace_id, name, agent_id, session_id, message, cron, timezone, budget_cents, enabled, next_fire_ms, created_ms";

pub async fn insert(db: &dyn Sql, r: &NewRoutine<'_>) -> DbResult<RoutineRow> {
    let row = first(
        db,
        stmt!(
            INSERT,
            r.routine_id,
            r.workspace_id,
            r.name,
            r.agent_id,
            r.session_id,
            r.message,
            r.cron,
            r.timezone,
            r.budget_cents,
            r.next_fire_ms,
            r.key_id,
            r.now_ms
        ),
    )
    .await?;
    row.ok_or_else(|| super::DbError::Other("insert returned no row".into()))
}

pub async fn get(db: &dyn Sql, routine_id: &str) -> DbResult<Option<RoutineRow>> {
    const GET: &str =
        "SELECT routine_id, workspace_id, name, agent_id, session_id, message, cron, timezone, budget_cents, enabled,
        next_fire_ms, created_ms FROM routine WHERE routine_id = ?1";
    first(db, stmt!(GET, routine_id)).await
}

pub async fn list(db: &dyn Sql, workspace_id: &str) -> DbResult<Vec<RoutineRow>> {
    const LIST: &str =
        "SELECT routine_id, workspace_id, name, agent_id, session_id, message, cron, timezone, budget_cents, enabled,
        next_fire_ms, created_ms FROM routine WHERE workspace_id = ?1 ORDER BY created_ms DESC LIMIT 200";
    rows(db, stmt!(LIST, workspace_id)).await
}

/// A routine's settable fields, as `update_routine` computed them.
pub struct Change<'a> {
    pub name: &'a str,
    pub message: &'a str,
    pub cron: Option<&'a str>,
    pub timezone: &'a str,
    pub budget_cents: Option<i64>,
    pub enabled: bool,
    pub next_fire_ms: Option<i64>,
}

pub async fn update(db: &dyn Sql, routine_id: &str, c: &Change<'_>) -> DbResult<Option<RoutineRow>> {
    const UPDATE: &str = "UPDATE routine SET name = ?2, message = ?3, cron = ?4, timezone = ?5, budget_cents = ?6,
        enabled = ?7, next_fire_ms = ?8 WHERE routine_id = ?1
      RETURNING routine_id, workspace_id, name, agent_id, session_id, message, cron, timezone, budget_cents, enabled,
        next_fire_ms, created_ms";
    first(
        db,
        stmt!(UPDATE, routine_id, c.name, c.message, c.cron, c.timezone, c.budget_cents, c.enabled, c.next_fire_ms),
    )
    .await
}

pub async fn delete(db: &dyn Sql, routine_id: &str, workspace_id: &str) -> DbResult<bool> {
    const DELETE: &str = "DELETE FROM routine WHERE routine_id = ?1 AND workspace_id = ?2 RETURNING routine_id";
    Ok(!db.all(stmt!(DELETE, routine_id, workspace_id)).await?.is_empty())
}

/// Routines whose next fire is due.
pub async fn due(db: &dyn Sql, now_ms: i64) -> DbResult<Vec<RoutineRow>> {
    const DUE: &str =
        "SELECT routine_id, workspace_id, name, agent_id, session_id, message, cron, timezone, budget_cents, enabled,
        next_fire_ms, created_ms FROM routine WHERE enabled = 1 AND next_fire_ms IS NOT NULL AND next_fire_ms <= ?1
      ORDER BY next_fire_ms LIMIT 500";
    rows(db, stmt!(DUE, now_ms)).await
}

crate::rules::params::words! {
    /// Where a routine's fire stands: `queued` until it ran (`done`) or gave up (`failed`).
    pub enum FireStatus {
        Queued = "queued",
        Done = "done",
        Failed = "failed",
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FireRow {
    pub fire_id: String,
    pub routine_id: String,
    #[serde(skip_serializing, default)]
    pub workspace_id: String,
    /// The time it stands for (a cron time, or when it was run by hand).
    pub scheduled_ms: i64,
    /// `cron` or `manual`.
    pub trigger: String,
    pub status: FireStatus,
    pub session_id: Option<String>,
    pub message_id: Option<String>,
    pub attempts: i64,
    pub error: Option<String>,
    /// What the fire's session has spent, in cents.
    pub spent_cents: Option<i64>,
    pub created_ms: i64,
}

const INSERT_CRON_FIRE: &str = "INSERT INTO routine_fire (fire_id, routine_id, workspace_id, scheduled_ms, trigger, status, created_ms, updated_ms)
  VALUES (?1, ?2, ?3, ?4, 'cron', 'queued', ?5, ?5) ON CONFLICT DO NOTHING RETURNING fire_id";
const ADVANCE: &str = "UPDATE routine SET next_fire_ms = ?2 WHERE routine_id = ?1";

/// Records a cron fire once per routine and scheduled time, and moves the routine to its next time, in
/// one batch. `true` when this call recorded it (and so must enqueue it).
pub async fn record_cron_fire(
    db: &dyn Sql,
    fire_id: &str,
    r: &RoutineRow,
    scheduled_ms: i64,
    next_ms: Option<i64>,
    now_ms: i64,
) -> DbResult<bool> {
    let results = db
        .batch(vec![
            stmt!(INSERT_CRON_FIRE, fire_id, r.routine_id.as_str(), r.workspace_id.as_str(), scheduled_ms, now_ms),
            stmt!(ADVANCE, r.routine_id.as_str(), next_ms),
        ])
        .await?;
    Ok(results.first().is_some_and(|rows| !rows.is_empty()))
}

const INSERT_MANUAL_FIRE: &str = "INSERT INTO routine_fire (fire_id, routine_id, workspace_id, scheduled_ms, trigger, status, created_ms, updated_ms)
  VALUES (?1, ?2, ?3, ?4, 'manual', 'queued', ?4, ?4) ON CONFLICT (fire_id) DO NOTHING";

pub async fn record_manual_fire(db: &dyn Sql, fire_id: &str, r: &RoutineRow, now_ms: i64) -> DbResult<()> {
    db.all(stmt!(INSERT_MANUAL_FIRE, fire_id, r.routine_id.as_str(), r.workspace_id.as_str(), now_ms)).await.map(drop)
}

pub async fn fire(db: &dyn Sql, fire_id: &str) -> DbResult<Option<FireRow>> {
    const GET: &str =
        "SELECT f.fire_id, f.routine_id, f.workspace_id, f.scheduled_ms, f.trigger, f.status, f.session_id,
        f.message_id, f.attempts, f.error, s.spent_cents, f.created_ms
      FROM routine_fire f LEFT JOIN session s ON s.session_id = f.session_id WHERE f.fire_id = ?1";
    first(db, stmt!(GET, fire_id)).await
}

/// A routine's newest fires.
pub async fn recent_fires(db: &dyn Sql, routine_id: &str, limit: i64) -> DbResult<Vec<FireRow>> {
    const RECENT: &str =
        "SELECT f.fire_id, f.routine_id, f.workspace_id, f.scheduled_ms, f.trigger, f.status, f.session_id,
        f.message_id, f.attempts, f.error, s.spent_cents, f.created_ms
      FROM routine_fire f LEFT JOIN session s ON s.session_id = f.session_id
      WHERE f.routine_id = ?1 ORDER BY f.created_ms DESC, f.fire_id DESC LIMIT ?2";
    rows(db, stmt!(RECENT, routine_id, limit)).await
}

/// Fires still queued long after they were recorded (their message was lost): to enqueue again.
pub async fn stranded(db: &dyn Sql, older_than_ms: i64) -> DbResult<Vec<String>> {
    const STRANDED: &str =
        "SELECT fire_id FROM routine_fire WHERE status = 'queued' AND created_ms < ?1 AND attempts < 20 LIMIT 100";
    #[derive(Deserialize)]
    struct Row {
        fire_id: String,
    }
    Ok(rows::<Row>(db, stmt!(STRANDED, older_than_ms)).await?.into_iter().map(|r| r.fire_id).collect())
}

const SETTLE: &str =
    "UPDATE routine_fire SET status = ?2, session_id = COALESCE(?3, session_id), message_id = COALESCE(?4, message_id),
    error = ?5, attempts = attempts + 1, updated_ms = ?6 WHERE fire_id = ?1 AND status = 'queued'";

/// Moves a queued fire to `done` or `failed` (or, with `queued`, counts a failed attempt).
pub async fn settle(
    db: &dyn Sql,
    fire_id: &str,
    status: FireStatus,
    session_id: Option<&str>,
    message_id: Option<&str>,
    error: Option<&str>,
    now_ms: i64,
) -> DbResult<()> {
    db.all(stmt!(SETTLE, fire_id, status.as_str(), session_id, message_id, error, now_ms)).await.map(drop)
}
