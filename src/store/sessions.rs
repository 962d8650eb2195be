//! The session index in D1: what lists, filters and `get_session` read without asking the object.

use super::{first, rows, DbResult, Sql, Stmt};
use crate::stmt;
use serde::{Deserialize, Serialize};

crate::rules::params::words! {
    /// A session's status: starting, waiting for a message, running a turn, or stopped for good.
    pub enum SessionStatus {
        Provisioning = "provisioning",
        Idle = "idle",
        Running = "running",
        Terminated = "terminated",
    }
}

/// A session as `get_session` and `list_sessions` show it.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SessionRow {
    pub session_id: String,
    /// Internal; clients see the workspace's slug where it matters.
    #[serde(skip_serializing, default)]
    pub workspace_id: String,
    pub task_id: String,
    pub agent_id: String,
    pub agent_name: String,
    pub harness: String,
    pub model: String,
    pub thinking: String,
    pub status: SessionStatus,
    /// The first message, cut short.
    pub title: String,
    /// The agent's one-line status note.
    pub note: String,
    pub budget_cents: Option<i64>,
    pub spent_cents: i64,
    pub last_message_id: Option<String>,
    /// How it joined its task: `root`, `helper`, `handoff` or `child`.
    pub relation: String,
    /// The session it came from (handoffs and children).
    pub parent_session_id: Option<String>,
    pub created_ms: i64,
    pub updated_ms: i64,
}

pub struct NewSession<'a> {
    pub session_id: &'a str,
    pub workspace_id: &'a str,
    pub task_id: &'a str,
    pub agent_id: &'a str,
    pub agent_name: &'a str,
    pub harness: &'a str,
    pub model: &'a str,
    pub thinking: &'a str,
    pub title: &'a str,
    pub budget_cents: Option<i64>,
    pub message_id: &'a str,
    pub key_id: Option<&'a str>,
    /// `root`, `helper`, `handoff` or `child`.
    pub relation: &'a str,
    pub parent_session_id: Option<&'a str>,
    pub now_ms: i64,
}

// A session's lane starts at its task's base head: it has merged every commit made before it joined. A
// hand-off's continues its source's lane instead: the same merge base and any merge left in conflict.
const INSERT: &str = "INSERT INTO session (session_id, workspace_id, task_id, agent_id, agent_name, harness, model, thinking,
    status, title, budget_cents, last_message_id, started_by_key_id, created_ms, updated_ms, relation, parent_session_id,
    lane_base_seq, lane_merging)
  VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'provisioning', ?9, ?10, ?11, ?12, ?13, ?13, ?14, ?15,
    COALESCE((SELECT lane_base_seq FROM session WHERE session_id = ?15 AND ?14 = 'handoff'),
      (SELECT COALESCE(MAX(seq), 0) FROM task_commit WHERE task_id = ?3)),
    (SELECT lane_merging FROM session WHERE session_id = ?15 AND ?14 = 'handoff'))
  ON CONFLICT (session_id) DO NOTHING";
/// A hand-off's lane starts as a copy of its source's, every version, so the work not landed yet goes on in
/// the new session (the bytes are shared: blobs are kept by their hash).
const COPY_LANE: &str = "INSERT INTO task_file (task_id, workspace_id, lane, path, version, size_bytes, sha256,
    writer_session_id, writer_key_id, created_ms, base_seq, deleted)
  SELECT task_id, workspace_id, ?2, path, version, size_bytes, sha256, writer_session_id, writer_key_id, created_ms,
    base_seq, deleted
  FROM task_file WHERE task_id = ?1 AND lane = ?3
  ON CONFLICT DO NOTHING";
/// Counts the session on its agent only if the insert just before it added the row.
const COUNT_AGENT: &str = "UPDATE agent SET session_count = session_count + 1 WHERE agent_id = ?1 AND changes() = 1";
/// A new task gives each session its own lane (tasks made before lanes were the default keep theirs).
const INSERT_TASK: &str =
    "INSERT INTO task (task_id, workspace_id, title, created_ms, lanes) VALUES (?1, ?2, ?3, ?4, 1)
  ON CONFLICT (task_id) DO NOTHING";

/// Indexes a new session (and a new task for a root session) and counts it on its agent, once, in one
/// atomic batch: a retry with the same id changes nothing.
pub async fn insert(db: &dyn Sql, s: &NewSession<'_>) -> DbResult<()> {
    let mut stmts = vec![
        stmt!(
            INSERT,
            s.session_id,
            s.workspace_id,
            s.task_id,
            s.agent_id,
            s.agent_name,
            s.harness,
            s.model,
            s.thinking,
            s.title,
            s.budget_cents,
            s.message_id,
            s.key_id,
            s.now_ms,
            s.relation,
            s.parent_session_id
        ),
        stmt!(COUNT_AGENT, s.agent_id),
    ];
    if s.task_id == s.session_id {
        stmts.push(stmt!(INSERT_TASK, s.task_id, s.workspace_id, s.title, s.now_ms));
    }
    if let (Some(source), "handoff") = (s.parent_session_id, s.relation) {
        stmts.push(stmt!(COPY_LANE, s.task_id, s.session_id, source));
    }
    db.batch(stmts).await.map(drop)
}

/// Forgets a session whose object refused to start it (the wallet or a budget): only while it is still
/// `provisioning`, and its task too if the session made it and nothing else joined.
const DISCARD: &str = "DELETE FROM session WHERE session_id = ?1 AND status = 'provisioning'";
const UNCOUNT_AGENT: &str =
    "UPDATE agent SET session_count = session_count - 1 WHERE agent_id = ?1 AND session_count > 0 AND changes() = 1";
const DISCARD_TASK: &str =
    "DELETE FROM task WHERE task_id = ?1 AND NOT EXISTS (SELECT 1 FROM session WHERE task_id = ?1)";

pub async fn discard(db: &dyn Sql, session_id: &str, agent_id: &str) -> DbResult<()> {
    db.batch(vec![stmt!(DISCARD, session_id), stmt!(UNCOUNT_AGENT, agent_id), stmt!(DISCARD_TASK, session_id)])
        .await
        .map(drop)
}

pub async fn get(db: &dyn Sql, session_id: &str) -> DbResult<Option<SessionRow>> {
    const GET: &str =
        "SELECT session_id, workspace_id, task_id, agent_id, agent_name, harness, model, thinking, status, title, note,
        budget_cents, spent_cents, last_message_id, relation, parent_session_id, created_ms, updated_ms
        FROM session WHERE session_id = ?1";
    first(db, stmt!(GET, session_id)).await
}

/// A page of a workspace's sessions, newest first, after a keyset position.
pub async fn list(
    db: &dyn Sql,
    workspace_id: &str,
    agent_id: Option<&str>,
    before: Option<(i64, String)>,
    limit: i64,
) -> DbResult<Vec<SessionRow>> {
    const LIST: &str =
        "SELECT session_id, workspace_id, task_id, agent_id, agent_name, harness, model, thinking, status, title, note,
        budget_cents, spent_cents, last_message_id, relation, parent_session_id, created_ms, updated_ms FROM session
      WHERE workspace_id = ?1 AND (?2 IS NULL OR agent_id = ?2)
        AND (?3 IS NULL OR created_ms < ?3 OR (created_ms = ?3 AND session_id < ?4))
      ORDER BY created_ms DESC, session_id DESC LIMIT ?5";
    let (at, id) = before.map_or((None, None), |(a, i)| (Some(a), Some(i)));
    rows(db, stmt!(LIST, workspace_id, agent_id, at, id, limit)).await
}

const MARK: &str =
    "UPDATE session SET status = ?2, spent_cents = ?3, last_message_id = COALESCE(?4, last_message_id), updated_ms = ?5
  WHERE session_id = ?1 AND status <> 'terminated'";

/// The object's write-back of status and spend. A terminated session stays terminated.
pub fn mark(
    session_id: &str,
    status: SessionStatus,
    spent_cents: i64,
    last_message_id: Option<&str>,
    now_ms: i64,
) -> Stmt {
    stmt!(MARK, session_id, status.as_str(), spent_cents, last_message_id, now_ms)
}

const SET_MODEL: &str = "UPDATE session SET model = ?2, thinking = ?3, updated_ms = ?4 WHERE session_id = ?1";

pub async fn set_model(db: &dyn Sql, session_id: &str, model: &str, thinking: &str, now_ms: i64) -> DbResult<()> {
    db.all(stmt!(SET_MODEL, session_id, model, thinking, now_ms)).await.map(drop)
}

const IN_TASK: &str =
    "SELECT session_id, workspace_id, task_id, agent_id, agent_name, harness, model, thinking, status, title, note,
    budget_cents, spent_cents, last_message_id, relation, parent_session_id, created_ms, updated_ms
  FROM session WHERE task_id = ?1 ORDER BY created_ms, session_id LIMIT 500";

/// A task's sessions, oldest first (the root is the first).
pub async fn in_task(db: &dyn Sql, task_id: &str) -> DbResult<Vec<SessionRow>> {
    rows(db, stmt!(IN_TASK, task_id)).await
}

const LIVE_IN_WORKSPACE: &str =
    "SELECT session_id FROM session WHERE workspace_id = ?1 AND status <> 'terminated' LIMIT 10000";

/// Sessions of a workspace that are not terminated.
pub async fn live_in_workspace(db: &dyn Sql, workspace_id: &str) -> DbResult<Vec<String>> {
    #[derive(Deserialize)]
    struct Row {
        session_id: String,
    }
    Ok(rows::<Row>(db, stmt!(LIVE_IN_WORKSPACE, workspace_id)).await?.into_iter().map(|r| r.session_id).collect())
}

const ALL_IN_WORKSPACE: &str = "SELECT session_id FROM session WHERE workspace_id = ?1 LIMIT 100000";

/// Every session of a workspace.
pub async fn all_in_workspace(db: &dyn Sql, workspace_id: &str) -> DbResult<Vec<String>> {
    #[derive(Deserialize)]
    struct Row {
        session_id: String,
    }
    Ok(rows::<Row>(db, stmt!(ALL_IN_WORKSPACE, workspace_id)).await?.into_iter().map(|r| r.session_id).collect())
}

const SET_NOTE: &str = "UPDATE session SET note = ?2, updated_ms = ?3 WHERE session_id = ?1";

/// The agent's one-line status.
pub async fn set_note(db: &dyn Sql, session_id: &str, note: &str, now_ms: i64) -> DbResult<()> {
    db.all(stmt!(SET_NOTE, session_id, note, now_ms)).await.map(drop)
}
