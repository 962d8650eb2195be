//! Runners and the turns they claim. A claim is one statement: it leases the oldest queued (or
//! abandoned) turn, so two runners never hold the same turn ([`super::lease`]).

use super::lease::{queue, Claimant, Queue};
use super::{first, DbResult, Sql};
use crate::stmt;
use serde::{Deserialize, Serialize};

pub async fn register(
    db: &dyn Sql,
    runner_id: &str,
    workspace_id: &str,
    name: &str,
    token_hash: &str,
    now_ms: i64,
) -> DbResult<()> {
    const INSERT: &str =
        "INSERT INTO runner (runner_id, workspace_id, name, token_hash, created_ms) VALUES (?1, ?2, ?3, ?4, ?5)";
    db.all(stmt!(INSERT, runner_id, workspace_id, name, token_hash, now_ms)).await.map(drop)
}

/// Registers the runner of a hosted session's sandbox, which claims only that session's turns and
/// checkouts; a session has one, whose token a new registration replaces (each boot hands out a fresh
/// token, and the one before stops working).
pub async fn register_hosted(
    db: &dyn Sql,
    runner_id: &str,
    workspace_id: &str,
    session_id: &str,
    name: &str,
    token_hash: &str,
    now_ms: i64,
) -> DbResult<()> {
    // Seen at its boot: a sandbox starting counts against the workspace's cap ([`sandboxes_busy`]).
    const UPSERT: &str =
        "INSERT INTO runner (runner_id, workspace_id, name, token_hash, created_ms, session_id, last_seen_ms)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?5)
      ON CONFLICT (session_id) WHERE session_id IS NOT NULL
      DO UPDATE SET token_hash = excluded.token_hash, last_seen_ms = excluded.last_seen_ms";
    db.all(stmt!(UPSERT, runner_id, workspace_id, name, token_hash, now_ms, session_id)).await.map(drop)
}

#[derive(Debug, Clone, Deserialize)]
pub struct RunnerRow {
    pub runner_id: String,
    pub workspace_id: String,
    pub name: String,
    /// The hosted session whose sandbox this runner runs in; `None` for a person's runner.
    #[serde(default)]
    pub session_id: Option<String>,
}

impl RunnerRow {
    /// This runner as a claim names it.
    pub fn claimant(&self) -> Claimant<'_> {
        Claimant {
            workspace_id: &self.workspace_id,
            runner_id: &self.runner_id,
            session_id: self.session_id.as_deref(),
        }
    }
}

/// The runner behind a token, touching its last-seen time (and its sandbox's boot, for a sandbox's).
pub async fn by_token(db: &dyn Sql, token_hash: &str, now_ms: i64) -> DbResult<Option<RunnerRow>> {
    const GET: &str = "UPDATE runner SET last_seen_ms = ?2 WHERE token_hash = ?1
      RETURNING runner_id, workspace_id, name, session_id";
    let touch = stmt!(super::sandboxes::TOUCH, token_hash, now_ms);
    let mut done = db.batch(vec![touch, stmt!(GET, token_hash, now_ms)]).await?;
    done.pop().and_then(|rows| rows.into_iter().next()).map(super::decode).transpose()
}

/// Queues a runner turn once; a `hosted` one is claimed only by its session's sandbox.
pub async fn enqueue(
    db: &dyn Sql,
    session_id: &str,
    message_id: &str,
    workspace_id: &str,
    hosted: bool,
    now_ms: i64,
) -> DbResult<()> {
    const INSERT: &str = "INSERT INTO runner_turn (session_id, message_id, workspace_id, status, created_ms, hosted)
      VALUES (?1, ?2, ?3, 'queued', ?4, ?5)
      ON CONFLICT (session_id, message_id) DO NOTHING";
    db.all(stmt!(INSERT, session_id, message_id, workspace_id, now_ms, hosted)).await.map(drop)
}

crate::rules::params::words! {
    /// Where a runner's turn stands: `queued`, `leased` by the runner running it, then `done`, or
    /// `cancelled` before it ended.
    pub enum TurnStatus {
        Queued = "queued",
        Leased = "leased",
        Done = "done",
        Cancelled = "cancelled",
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TurnRow {
    pub session_id: String,
    pub message_id: String,
    pub workspace_id: String,
    pub status: TurnStatus,
    pub runner_id: Option<String>,
    pub lease_id: Option<String>,
    pub lease_expires_ms: Option<i64>,
    pub attempts: i64,
}

const QUEUE: Queue = queue!(
    "runner_turn",
    "session_id, message_id, workspace_id, status, runner_id, lease_id, lease_expires_ms, attempts",
    // A person's runner claims turns that are not hosted; a hosted sandbox's, its own session's only.
    claims: "CASE WHEN ?6 IS NULL THEN hosted = 0 ELSE session_id = ?6 END",
    done_sets: ""
);

/// Leases the oldest turn of the workspace `runner` may claim: queued, or leased by a runner that stopped
/// renewing it. A person's runner never claims a hosted turn; a hosted sandbox's runner claims only its
/// own session's.
pub async fn claim(
    db: &dyn Sql,
    runner: &Claimant<'_>,
    lease_id: &str,
    lease_ms: i64,
    now_ms: i64,
) -> DbResult<Option<TurnRow>> {
    QUEUE.claim(db, runner, lease_id, lease_ms, now_ms).await
}

/// The hosted runner of a session, if one was registered.
pub async fn hosted_runner(db: &dyn Sql, session_id: &str) -> DbResult<Option<RunnerRow>> {
    const GET: &str = "SELECT runner_id, workspace_id, name, session_id FROM runner WHERE session_id = ?1";
    first(db, stmt!(GET, session_id)).await
}

/// The turn `runner_id` holds under `lease_id` (lapsed or not, until another runner takes it over).
pub async fn held(db: &dyn Sql, runner_id: &str, lease_id: &str) -> DbResult<Option<TurnRow>> {
    QUEUE.held(db, runner_id, lease_id).await
}

/// The turn of a lease that has not lapsed: its runner may still answer.
pub async fn live(db: &dyn Sql, lease_id: &str, now_ms: i64) -> DbResult<Option<TurnRow>> {
    QUEUE.live(db, lease_id, now_ms).await
}

/// Extends a held lease; `false` when another runner took the turn over or it ended.
pub async fn renew(db: &dyn Sql, runner_id: &str, lease_id: &str, until_ms: i64) -> DbResult<bool> {
    QUEUE.renew(db, runner_id, lease_id, until_ms).await
}

/// Ends the turn of a held lease.
pub async fn finish(db: &dyn Sql, runner_id: &str, lease_id: &str) -> DbResult<bool> {
    QUEUE.finish(db, runner_id, lease_id, vec![]).await
}

/// Cancels a runner turn still queued or leased: no runner claims it again, and the lease that held it
/// answers `stop`. `Some(lease_id)` when one was cancelled,
/// by the lease that held it, if any ([`cancelled_under`]).
pub async fn cancel(db: &dyn Sql, session_id: &str, message_id: &str) -> DbResult<Option<Option<String>>> {
    #[derive(Deserialize)]
    struct Cancelled {
        lease_id: Option<String>,
    }
    const CANCEL: &str = "UPDATE runner_turn SET status = 'cancelled'
      WHERE session_id = ?1 AND message_id = ?2 AND status IN ('queued', 'leased') RETURNING lease_id";
    Ok(first::<Cancelled>(db, stmt!(CANCEL, session_id, message_id)).await?.map(|c| c.lease_id))
}

/// Whether the turn `runner_id` held under `lease_id` was cancelled: the runner must end the agent.
pub async fn cancelled_under(db: &dyn Sql, runner_id: &str, lease_id: &str) -> DbResult<bool> {
    const CANCELLED: &str =
        "SELECT session_id FROM runner_turn WHERE lease_id = ?1 AND runner_id = ?2 AND status = 'cancelled'";
    Ok(!db.all(stmt!(CANCELLED, lease_id, runner_id)).await?.is_empty())
}

/// Whether a lease's turn already ended (a retried final post is answered, not refused).
pub async fn finished_under(db: &dyn Sql, lease_id: &str) -> DbResult<bool> {
    const DONE: &str = "SELECT session_id FROM runner_turn WHERE lease_id = ?1 AND status = 'done'";
    Ok(!db.all(stmt!(DONE, lease_id)).await?.is_empty())
}

/// Every live lease of a workspace's runner turns (or of one session's, with `session_id`).
pub async fn live_leases(
    db: &dyn Sql,
    workspace_id: &str,
    session_id: Option<&str>,
    now_ms: i64,
) -> DbResult<Vec<TurnRow>> {
    const LIVE: &str =
        "SELECT session_id, message_id, workspace_id, status, runner_id, lease_id, lease_expires_ms, attempts
      FROM runner_turn WHERE workspace_id = ?1 AND (?2 IS NULL OR session_id = ?2) AND status = 'leased'
        AND lease_expires_ms >= ?3 LIMIT 500";
    super::rows(db, stmt!(LIVE, workspace_id, session_id, now_ms)).await
}

crate::rules::params::words! {
    /// Where a runner job stands: `queued` until its runner answered it (`done`, with its result).
    pub enum JobStatus {
        Queued = "queued",
        Done = "done",
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct JobRow {
    pub job_id: String,
    pub workspace_id: String,
    pub session_id: String,
    pub lease_id: String,
    pub kind: String,
    pub spec: String,
    pub status: JobStatus,
    pub result: Option<String>,
    pub key_served: i64,
}

pub async fn insert_job(
    db: &dyn Sql,
    turn: &TurnRow,
    job_id: &str,
    kind: &str,
    spec: &str,
    now_ms: i64,
) -> DbResult<()> {
    const INSERT: &str =
        "INSERT INTO runner_job (job_id, workspace_id, session_id, lease_id, kind, spec, status, created_ms)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'queued', ?7)";
    let lease = turn.lease_id.as_deref().unwrap_or_default();
    db.all(stmt!(INSERT, job_id, &turn.workspace_id, &turn.session_id, lease, kind, spec, now_ms)).await.map(drop)
}

/// A lease's jobs still waiting for their results, oldest first.
pub async fn open_jobs(db: &dyn Sql, lease_id: &str) -> DbResult<Vec<JobRow>> {
    const OPEN: &str = "SELECT job_id, workspace_id, session_id, lease_id, kind, spec, status, result, key_served
      FROM runner_job WHERE lease_id = ?1 AND status = 'queued' ORDER BY created_ms, job_id";
    super::rows(db, stmt!(OPEN, lease_id)).await
}

pub async fn job(db: &dyn Sql, job_id: &str) -> DbResult<Option<JobRow>> {
    const GET: &str = "SELECT job_id, workspace_id, session_id, lease_id, kind, spec, status, result, key_served
      FROM runner_job WHERE job_id = ?1";
    first(db, stmt!(GET, job_id)).await
}

/// Writes a job's result once; `false` when it already had one (a retried post).
pub async fn finish_job(db: &dyn Sql, job_id: &str, lease_id: &str, result: &str, now_ms: i64) -> DbResult<bool> {
    const DONE: &str = "UPDATE runner_job SET status = 'done', result = ?3, done_ms = ?4
      WHERE job_id = ?1 AND lease_id = ?2 AND status = 'queued' RETURNING job_id";
    Ok(!db.all(stmt!(DONE, job_id, lease_id, result, now_ms)).await?.is_empty())
}

/// Claims an ssh_agent job's key for its one hand-out; `false` when it was already served.
pub async fn serve_key(db: &dyn Sql, job_id: &str, lease_id: &str) -> DbResult<bool> {
    const SERVE: &str = "UPDATE runner_job SET key_served = 1
      WHERE job_id = ?1 AND lease_id = ?2 AND kind = 'ssh_agent' AND status = 'queued' AND key_served = 0
      RETURNING job_id";
    Ok(!db.all(stmt!(SERVE, job_id, lease_id)).await?.is_empty())
}

/// What lists show of a runner: never its token or the token's hash.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunnerInfo {
    pub runner_id: String,
    pub name: String,
    pub created_ms: i64,
    /// When it last called the server; `null` before its first call.
    pub last_seen_ms: Option<i64>,
    /// The session whose turn it holds a live lease on, if any.
    pub running_session_id: Option<String>,
}

/// A workspace's runners, most recently seen first.
pub async fn list(db: &dyn Sql, workspace_id: &str, now_ms: i64) -> DbResult<Vec<RunnerInfo>> {
    const LIST: &str = "SELECT r.runner_id, r.name, r.created_ms, r.last_seen_ms,
        (SELECT t.session_id FROM runner_turn t WHERE t.runner_id = r.runner_id AND t.status = 'leased'
           AND t.lease_expires_ms >= ?2 LIMIT 1) AS running_session_id
      FROM runner r WHERE r.workspace_id = ?1 ORDER BY COALESCE(r.last_seen_ms, r.created_ms) DESC, r.runner_id
      LIMIT 500";
    super::rows(db, stmt!(LIST, workspace_id, now_ms)).await
}

/// Deletes a runner (its token stops working) and hands the turns it held back to the queue, their
/// session tokens revoked; `false` when the workspace has no such runner.
pub async fn revoke(db: &dyn Sql, workspace_id: &str, runner_id: &str) -> DbResult<bool> {
    const TOKENS: &str = "DELETE FROM session_token WHERE lease_id IN
      (SELECT lease_id FROM runner_turn WHERE runner_id = ?1 AND workspace_id = ?2 AND status = 'leased')";
    const RELEASE: &str = "UPDATE runner_turn SET status = 'queued', runner_id = NULL, lease_id = NULL,
        lease_expires_ms = NULL WHERE runner_id = ?1 AND workspace_id = ?2 AND status = 'leased'";
    const DELETE: &str = "DELETE FROM runner WHERE runner_id = ?1 AND workspace_id = ?2 RETURNING runner_id";
    let stmts = vec![
        stmt!(TOKENS, runner_id, workspace_id),
        stmt!(RELEASE, runner_id, workspace_id),
        stmt!(DELETE, runner_id, workspace_id),
    ];
    let done = db.batch(stmts).await?;
    Ok(done.last().is_some_and(|rows| !rows.is_empty()))
}

/// How many of the workspace's sessions other than `session_id` have a sandbox that booted or called the
/// server since `since_ms`: the sandboxes it runs now, as far as the server can tell (one that went to
/// sleep counts until then).
pub async fn sandboxes_busy(db: &dyn Sql, workspace_id: &str, session_id: &str, since_ms: i64) -> DbResult<i64> {
    #[derive(Deserialize)]
    struct Row {
        n: i64,
    }
    const BUSY: &str = "SELECT COUNT(*) AS n FROM runner WHERE workspace_id = ?1 AND session_id IS NOT NULL
      AND session_id != ?2 AND last_seen_ms >= ?3";
    Ok(first::<Row>(db, stmt!(BUSY, workspace_id, session_id, since_ms)).await?.map_or(0, |r| r.n))
}

/// How many of a workspace's people's runners called the server since `since_ms` (an idle runner calls
/// at least every 25 s, waiting for turns). Sandboxes are not counted: a session's own is started for
/// its checks when none of these is online ([`crate::domain::sandboxes`]).
pub async fn online(db: &dyn Sql, workspace_id: &str, since_ms: i64) -> DbResult<i64> {
    #[derive(Deserialize)]
    struct Row {
        n: i64,
    }
    const ONLINE: &str = "SELECT COUNT(*) AS n FROM runner WHERE workspace_id = ?1 AND last_seen_ms >= ?2
      AND session_id IS NULL";
    Ok(first::<Row>(db, stmt!(ONLINE, workspace_id, since_ms)).await?.map_or(0, |r| r.n))
}
