//! What R2's bytes are kept for: the rows that refer to them, and the deleted workspaces whose bytes the
//! cron still has to purge.

use super::{rows, DbResult, Sql};
use crate::stmt;
use serde::Deserialize;

/// Queues a deleted workspace's bytes for purging (in the batch that deletes it).
pub fn queue_purge(workspace_id: &str, now_ms: i64) -> super::Stmt {
    const QUEUE: &str = "INSERT INTO blob_purge (workspace_id, deleted_ms, next_ms) VALUES (?1, ?2, ?2)
      ON CONFLICT (workspace_id) DO NOTHING";
    stmt!(QUEUE, workspace_id, now_ms)
}

#[derive(Debug, Clone, Deserialize)]
pub struct Purge {
    pub workspace_id: String,
    pub deleted_ms: i64,
}

/// Deleted workspaces due a look, oldest first.
pub async fn due(db: &dyn Sql, now_ms: i64, limit: i64) -> DbResult<Vec<Purge>> {
    const DUE: &str = "SELECT workspace_id, deleted_ms FROM blob_purge WHERE next_ms <= ?1 ORDER BY next_ms LIMIT ?2";
    rows(db, stmt!(DUE, now_ms, limit)).await
}

/// Looks at a workspace's prefix again at `at_ms`.
pub async fn recheck_at(db: &dyn Sql, workspace_id: &str, at_ms: i64) -> DbResult<()> {
    const LATER: &str = "UPDATE blob_purge SET next_ms = ?2 WHERE workspace_id = ?1";
    db.all(stmt!(LATER, workspace_id, at_ms)).await.map(drop)
}

pub async fn purged(db: &dyn Sql, workspace_id: &str) -> DbResult<()> {
    const DONE: &str = "DELETE FROM blob_purge WHERE workspace_id = ?1";
    db.all(stmt!(DONE, workspace_id)).await.map(drop)
}

/// Whether any file version, artifact or trace of the workspace refers to these bytes.
pub async fn referenced(db: &dyn Sql, workspace_id: &str, sha256: &str) -> DbResult<bool> {
    const ANY: &str = "SELECT 1 AS one WHERE EXISTS (SELECT 1 FROM task_file WHERE workspace_id = ?1 AND sha256 = ?2)
      OR EXISTS (SELECT 1 FROM artifact WHERE workspace_id = ?1 AND sha256 = ?2)
      OR EXISTS (SELECT 1 FROM trace WHERE workspace_id = ?1 AND messages_sha256 = ?2)";
    Ok(!db.all(stmt!(ANY, workspace_id, sha256)).await?.is_empty())
}
