//! Workspace secrets, sealed (see [`crate::rules::seal`]). Nothing here ever sees a plain value.

use super::{first, rows, DbResult, Sql};
use crate::stmt;
use serde::{Deserialize, Serialize};

const PUT: &str = "INSERT INTO secret (workspace_id, name, sealed, created_ms, updated_ms) VALUES (?1, ?2, ?3, ?4, ?4)
  ON CONFLICT (workspace_id, name) DO UPDATE SET sealed = excluded.sealed, updated_ms = excluded.updated_ms";

pub async fn put(db: &dyn Sql, workspace_id: &str, name: &str, sealed: &str, now_ms: i64) -> DbResult<()> {
    db.all(stmt!(PUT, workspace_id, name, sealed, now_ms)).await.map(drop)
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SecretInfo {
    pub name: String,
    pub created_ms: i64,
    pub updated_ms: i64,
}

const LIST: &str = "SELECT name, created_ms, updated_ms FROM secret WHERE workspace_id = ?1 ORDER BY name LIMIT 500";

pub async fn list(db: &dyn Sql, workspace_id: &str) -> DbResult<Vec<SecretInfo>> {
    rows(db, stmt!(LIST, workspace_id)).await
}

const GET: &str = "SELECT sealed FROM secret WHERE workspace_id = ?1 AND name = ?2";

pub async fn sealed(db: &dyn Sql, workspace_id: &str, name: &str) -> DbResult<Option<String>> {
    #[derive(Deserialize)]
    struct Row {
        sealed: String,
    }
    Ok(first::<Row>(db, stmt!(GET, workspace_id, name)).await?.map(|r| r.sealed))
}

const DELETE: &str = "DELETE FROM secret WHERE workspace_id = ?1 AND name = ?2 RETURNING name";

pub async fn delete(db: &dyn Sql, workspace_id: &str, name: &str) -> DbResult<bool> {
    Ok(!db.all(stmt!(DELETE, workspace_id, name)).await?.is_empty())
}
