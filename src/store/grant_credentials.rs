//! Credentials minted for grants (`crate::domain::mint`), sealed, one per grant, replaced when minted again.

use super::{first, DbResult, Sql};
use crate::stmt;
use serde::Deserialize;

#[derive(Debug, Deserialize)]
pub struct Kept {
    pub sealed: String,
    pub expires_ms: i64,
}

pub async fn get(db: &dyn Sql, grant_id: &str) -> DbResult<Option<Kept>> {
    const GET: &str = "SELECT sealed, expires_ms FROM grant_credential WHERE grant_id = ?1";
    first(db, stmt!(GET, grant_id)).await
}

pub async fn put(
    db: &dyn Sql,
    grant_id: &str,
    workspace_id: &str,
    sealed: &str,
    expires_ms: i64,
    now_ms: i64,
) -> DbResult<()> {
    const PUT: &str = "INSERT INTO grant_credential (grant_id, workspace_id, sealed, expires_ms, minted_ms)
      VALUES (?1, ?2, ?3, ?4, ?5)
      ON CONFLICT (grant_id) DO UPDATE SET sealed = excluded.sealed, expires_ms = excluded.expires_ms,
        minted_ms = excluded.minted_ms";
    db.all(stmt!(PUT, grant_id, workspace_id, sealed, expires_ms, now_ms)).await.map(drop)
}
