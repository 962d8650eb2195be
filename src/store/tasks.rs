//! Tasks: the shared folder several sessions work in, its budget, and what lists show of it.

use super::{first, rows, DbResult, Sql};
use crate::stmt;
use serde::{Deserialize, Serialize};

/// A task as `list_tasks` shows it.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskRow {
    pub task_id: String,
    #[serde(skip_serializing, default)]
    pub workspace_id: String,
    pub title: String,
    /// Cap on the sum of its sessions' spend, in cents.
    pub budget_cents: Option<i64>,
    /// What its sessions spent, in cents.
    pub cost_cents: i64,
    pub sessions: i64,
    pub running: i64,
    /// Requests its agents wait on.
    pub open_requests: i64,
    pub created_ms: i64,
}

const LIST: &str = "SELECT t.task_id, t.workspace_id, t.title, t.budget_cents,
    COALESCE(SUM(s.spent_cents), 0) AS cost_cents, COUNT(s.session_id) AS sessions,
    COALESCE(SUM(s.status IN ('running', 'provisioning')), 0) AS running,
    (SELECT COUNT(*) FROM request r WHERE r.task_id = t.task_id AND r.status = 'open') AS open_requests, t.created_ms
  FROM task t LEFT JOIN session s ON s.task_id = t.task_id
  WHERE t.workspace_id = ?1 AND (?2 IS NULL OR t.created_ms < ?2 OR (t.created_ms = ?2 AND t.task_id < ?3))
  GROUP BY t.task_id ORDER BY t.created_ms DESC, t.task_id DESC LIMIT ?4";

pub async fn list(
    db: &dyn Sql,
    workspace_id: &str,
    before: Option<(i64, String)>,
    limit: i64,
) -> DbResult<Vec<TaskRow>> {
    let (at, id) = before.map_or((None, None), |(a, i)| (Some(a), Some(i)));
    rows(db, stmt!(LIST, workspace_id, at, id, limit)).await
}

const GET: &str = "SELECT t.task_id, t.workspace_id, t.title, t.budget_cents,
    COALESCE(SUM(s.spent_cents), 0) AS cost_cents, COUNT(s.session_id) AS sessions,
    COALESCE(SUM(s.status IN ('running', 'provisioning')), 0) AS running,
    (SELECT COUNT(*) FROM request r WHERE r.task_id = t.task_id AND r.status = 'open') AS open_requests, t.created_ms
  FROM task t LEFT JOIN session s ON s.task_id = t.task_id WHERE t.task_id = ?1 GROUP BY t.task_id";

pub async fn get(db: &dyn Sql, task_id: &str) -> DbResult<Option<TaskRow>> {
    first(db, stmt!(GET, task_id)).await
}

const SPEND: &str =
    "SELECT t.budget_cents, COALESCE((SELECT SUM(spent_cents) FROM session WHERE task_id = t.task_id), 0) AS spent
  FROM task t WHERE t.task_id = ?1";

/// What a task's sessions spent and its budget; `None` when there is no such task.
pub async fn spend(db: &dyn Sql, task_id: &str) -> DbResult<Option<(i64, Option<i64>)>> {
    #[derive(Deserialize)]
    struct Row {
        budget_cents: Option<i64>,
        spent: i64,
    }
    Ok(first::<Row>(db, stmt!(SPEND, task_id)).await?.map(|r| (r.spent, r.budget_cents)))
}

const SET_BUDGET: &str = "UPDATE task SET budget_cents = ?2 WHERE task_id = ?1 RETURNING task_id";

pub async fn set_budget(db: &dyn Sql, task_id: &str, budget_cents: Option<i64>) -> DbResult<bool> {
    Ok(!db.all(stmt!(SET_BUDGET, task_id, budget_cents)).await?.is_empty())
}
