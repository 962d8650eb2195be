//! Hand-offs: where each stands.

use super::{first, DbResult, Sql};
use crate::stmt;
use serde::{Deserialize, Serialize};

crate::rules::params::words! {
    /// Where a hand-off stands: `pending` until its session started (`completed`) or could not (`failed`).
    pub enum HandoffState {
        Pending = "pending",
        Completed = "completed",
        Failed = "failed",
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HandoffRow {
    pub handoff_id: String,
    #[serde(skip_serializing, default)]
    pub workspace_id: String,
    pub source_session_id: String,
    /// The session to continue with, once `completed`.
    pub target_session_id: Option<String>,
    pub agent_id: String,
    pub status: HandoffState,
    pub error: Option<String>,
    pub created_ms: i64,
    pub updated_ms: i64,
}

const OPEN: &str =
    "INSERT INTO handoff (handoff_id, workspace_id, source_session_id, agent_id, status, created_ms, updated_ms)
  VALUES (?1, ?2, ?3, ?4, 'pending', ?5, ?5) ON CONFLICT (handoff_id) DO NOTHING";

pub async fn open(
    db: &dyn Sql,
    handoff_id: &str,
    workspace_id: &str,
    source: &str,
    agent_id: &str,
    now_ms: i64,
) -> DbResult<()> {
    db.all(stmt!(OPEN, handoff_id, workspace_id, source, agent_id, now_ms)).await.map(drop)
}

const FINISH: &str =
    "UPDATE handoff SET status = ?2, target_session_id = ?3, error = ?4, updated_ms = ?5 WHERE handoff_id = ?1";

pub async fn finish(
    db: &dyn Sql,
    handoff_id: &str,
    status: HandoffState,
    target: Option<&str>,
    error: Option<&str>,
    now_ms: i64,
) -> DbResult<()> {
    db.all(stmt!(FINISH, handoff_id, status.as_str(), target, error, now_ms)).await.map(drop)
}

const GET: &str = "SELECT handoff_id, workspace_id, source_session_id, target_session_id, agent_id, status, error, created_ms, updated_ms
  FROM handoff WHERE handoff_id = ?1";

pub async fn get(db: &dyn Sql, handoff_id: &str) -> DbResult<Option<HandoffRow>> {
    first(db, stmt!(GET, handoff_id)).await
}
