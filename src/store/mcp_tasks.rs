//! MCP tasks: the durable record of a tool call answered with a task handle, and the turn it follows.

use super::{first, rows, DbResult, Sql};
pub use crate::rules::task_status::TaskStatus;
use crate::stmt;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct McpTaskRow {
    pub task_id: String,
    pub workspace_id: String,
    pub key_id: String,
    pub tool: String,
    /// The tool's own result, as JSON text.
    pub call_result: String,
    pub session_id: String,
    pub message_id: String,
    pub cursor: Option<String>,
    pub status: TaskStatus,
    pub status_message: Option<String>,
    /// The `CallToolResult` (completed) or the JSON-RPC error (failed), as JSON text.
    pub outcome: Option<String>,
    pub ttl_ms: i64,
    pub created_ms: i64,
    pub updated_ms: i64,
    pub expires_ms: i64,
    /// How far the turn has been read: the last event read (`None` before the first read), the agent's
    /// last reply in what was read, and how many events that was.
    pub read_seq: Option<i64>,
    pub read_reply: Option<String>,
    pub read_events: i64,
}

/// How far a poll read the task's turn.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadProgress {
    pub seq: i64,
    pub reply: Option<String>,
    pub events: i64,
}

/// The columns a new task is written with; the read progress starts empty.
macro_rules! new_cols {
    () => {
        "task_id, workspace_id, key_id, tool, call_result, session_id, message_id, cursor, status, status_message,
         outcome, ttl_ms, created_ms, updated_ms, expires_ms"
    };
}

macro_rules! cols {
    () => {
        concat!(new_cols!(), ", read_seq, read_reply, read_events")
    };
}

/// Records a new task, `working`, unless its key already has `max_live` tasks not yet expired (counted
/// in the insert, so concurrent calls cannot pass the cap); whether it was recorded.
pub async fn insert(db: &dyn Sql, t: &McpTaskRow, max_live: i64) -> DbResult<bool> {
    const INSERT: &str = concat!(
        "INSERT INTO mcp_task (",
        new_cols!(),
        ") SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15
         WHERE (SELECT COUNT(*) FROM mcp_task WHERE key_id = ?3 AND expires_ms > ?13) < ?16
         RETURNING task_id"
    );
    db.all(stmt!(
        INSERT,
        t.task_id.as_str(),
        t.workspace_id.as_str(),
        t.key_id.as_str(),
        t.tool.as_str(),
        t.call_result.as_str(),
        t.session_id.as_str(),
        t.message_id.as_str(),
        t.cursor.as_deref(),
        t.status.as_str(),
        t.status_message.as_deref(),
        t.outcome.as_deref(),
        t.ttl_ms,
        t.created_ms,
        t.updated_ms,
        t.expires_ms,
        max_live
    ))
    .await
    .map(|rows| !rows.is_empty())
}

/// The key's task, unless it has expired.
pub async fn get(db: &dyn Sql, key_id: &str, task_id: &str, now_ms: i64) -> DbResult<Option<McpTaskRow>> {
    const GET: &str =
        concat!("SELECT ", cols!(), " FROM mcp_task WHERE task_id = ?1 AND key_id = ?2 AND expires_ms > ?3");
    first(db, stmt!(GET, task_id, key_id, now_ms)).await
}

/// The key's live tasks, newest first; with `before`, only those older than that `(created_ms, task_id)`.
pub async fn list(
    db: &dyn Sql,
    key_id: &str,
    before: Option<(i64, String)>,
    limit: i64,
    now_ms: i64,
) -> DbResult<Vec<McpTaskRow>> {
    const LIST: &str = concat!(
        "SELECT ",
        cols!(),
        " FROM mcp_task WHERE key_id = ?1 AND expires_ms > ?2
          AND (?3 IS NULL OR created_ms < ?3 OR (created_ms = ?3 AND task_id < ?4))
        ORDER BY created_ms DESC, task_id DESC LIMIT ?5"
    );
    let (at, id) = before.map_or((None, None), |(a, i)| (Some(a), Some(i)));
    rows(db, stmt!(LIST, key_id, now_ms, at, id, limit)).await
}

/// Moves a task that has not ended yet to `status`; a terminal task keeps what it ended with. Returns the
/// row as it now stands (`None` when it is gone).
pub async fn set_status(
    db: &dyn Sql,
    task_id: &str,
    status: TaskStatus,
    status_message: Option<&str>,
    outcome: Option<&str>,
    now_ms: i64,
) -> DbResult<Option<McpTaskRow>> {
    const SET: &str = concat!(
        "UPDATE mcp_task SET status = ?2, status_message = ?3, outcome = ?4, updated_ms = ?5
         WHERE task_id = ?1 AND status IN ('working', 'input_required') RETURNING ",
        cols!()
    );
    const GET: &str = concat!("SELECT ", cols!(), " FROM mcp_task WHERE task_id = ?1");
    if let Some(row) = first(db, stmt!(SET, task_id, status.as_str(), status_message, outcome, now_ms)).await? {
        return Ok(Some(row));
    }
    first(db, stmt!(GET, task_id)).await
}

/// Moves a task that has not ended on to `status`, with how far its turn has now been read. A poll that
/// read less than one already recorded (a concurrent poll got further) changes nothing, so the position
/// never goes back. Returns the row as it now stands (`None` when it is gone).
pub async fn advance(
    db: &dyn Sql,
    task_id: &str,
    read: &ReadProgress,
    status: TaskStatus,
    status_message: Option<&str>,
    outcome: Option<&str>,
    now_ms: i64,
) -> DbResult<Option<McpTaskRow>> {
    const ADVANCE: &str = concat!(
        "UPDATE mcp_task SET status = ?2, status_message = ?3, outcome = ?4, updated_ms = ?5,
           read_seq = ?6, read_reply = ?7, read_events = ?8
         WHERE task_id = ?1 AND status IN ('working', 'input_required') AND (read_seq IS NULL OR read_seq <= ?6)
         RETURNING ",
        cols!()
    );
    const GET: &str = concat!("SELECT ", cols!(), " FROM mcp_task WHERE task_id = ?1");
    let stmt = stmt!(
        ADVANCE,
        task_id,
        status.as_str(),
        status_message,
        outcome,
        now_ms,
        read.seq,
        read.reply.as_deref(),
        read.events
    );
    if let Some(row) = first(db, stmt).await? {
        return Ok(Some(row));
    }
    first(db, stmt!(GET, task_id)).await
}

/// Deletes the tasks past their time; how many went.
pub async fn forget_expired(db: &dyn Sql, now_ms: i64) -> DbResult<usize> {
    const FORGET: &str = "DELETE FROM mcp_task WHERE expires_ms <= ?1 RETURNING task_id";
    Ok(db.all(stmt!(FORGET, now_ms)).await?.len())
}
