//! A task's git remote: where `land` pushes, with which connector's grant, and what it last pushed.

use super::{first, DbResult, Sql};
use crate::stmt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RemoteRow {
    pub task_id: String,
    pub url: String,
    pub branch: String,
    pub connector_id: String,
    /// The commit agentsky last pushed there; the next push must build on it.
    pub pushed_head: Option<String>,
    pub updated_ms: i64,
}

pub async fn get(db: &dyn Sql, task_id: &str) -> DbResult<Option<RemoteRow>> {
    const GET: &str =
        "SELECT task_id, url, branch, connector_id, pushed_head, updated_ms FROM task_remote WHERE task_id = ?1";
    first(db, stmt!(GET, task_id)).await
}

/// Sets the remote; the last pushed head is kept only while the repository and branch stay the same.
pub async fn set(
    db: &dyn Sql,
    task_id: &str,
    workspace_id: &str,
    url: &str,
    branch: &str,
    connector_id: &str,
    now_ms: i64,
) -> DbResult<()> {
    const SET: &str = "INSERT INTO task_remote (task_id, workspace_id, url, branch, connector_id, updated_ms)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6)
      ON CONFLICT (task_id) DO UPDATE SET connector_id = excluded.connector_id, updated_ms = excluded.updated_ms,
        pushed_head = CASE WHEN task_remote.url = excluded.url AND task_remote.branch = excluded.branch
          THEN task_remote.pushed_head END,
        url = excluded.url, branch = excluded.branch";
    db.all(stmt!(SET, task_id, workspace_id, url, branch, connector_id, now_ms)).await.map(drop)
}

pub async fn remove(db: &dyn Sql, task_id: &str) -> DbResult<bool> {
    const DELETE: &str = "DELETE FROM task_remote WHERE task_id = ?1 RETURNING task_id";
    Ok(!db.all(stmt!(DELETE, task_id)).await?.is_empty())
}

/// Records a push, only if nobody set the remote (or pushed) in between.
pub async fn pushed(db: &dyn Sql, task_id: &str, url: &str, branch: &str, head: &str, now_ms: i64) -> DbResult<()> {
    const PUSHED: &str =
        "UPDATE task_remote SET pushed_head = ?4, updated_ms = ?5 WHERE task_id = ?1 AND url = ?2 AND branch = ?3";
    db.all(stmt!(PUSHED, task_id, url, branch, head, now_ms)).await.map(drop)
}
