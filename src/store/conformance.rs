//! The conformance suite's fixture tasks (`crate::mcp::fixtures_tasks`), served only under
//! `CONFORMANCE_FIXTURES=1`: each task's state as JSON, until it expires.

use super::{first, DbResult, Sql};
use crate::stmt;
use serde::Deserialize;

/// A task's state, `None` when unknown or expired.
pub async fn load(db: &dyn Sql, task_id: &str, now_ms: i64) -> DbResult<Option<String>> {
    #[derive(Deserialize)]
    struct Row {
        state: String,
    }
    const GET: &str = "SELECT state FROM conformance_task WHERE task_id = ?1 AND expires_ms > ?2";
    Ok(first::<Row>(db, stmt!(GET, task_id, now_ms)).await?.map(|r| r.state))
}

/// Writes a task's state, and lets expired ones go.
pub async fn save(db: &dyn Sql, task_id: &str, state: &str, expires_ms: i64, now_ms: i64) -> DbResult<()> {
    const PUT: &str = "INSERT INTO conformance_task (task_id, state, expires_ms) VALUES (?1, ?2, ?3)
      ON CONFLICT (task_id) DO UPDATE SET state = excluded.state";
    const FORGET: &str = "DELETE FROM conformance_task WHERE expires_ms <= ?1";
    db.batch(vec![stmt!(PUT, task_id, state, expires_ms), stmt!(FORGET, now_ms)]).await.map(drop)
}
