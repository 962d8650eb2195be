//! Deploy proofs: commands a runner ran under a grant covering `deploy` and saw exit 0 (see
//! `crate::runner::granted`). Kept as the SHA-256 of the argv.

use super::{DbResult, Sql, Stmt};
use crate::stmt;

pub struct Proof<'a> {
    pub workspace_id: &'a str,
    pub session_id: &'a str,
    pub connector_id: &'a str,
    pub grant_id: &'a str,
    pub runner_id: &'a str,
    pub argv_sha256: &'a str,
    pub now_ms: i64,
}

pub fn insert(p: &Proof<'_>) -> Stmt {
    const INSERT: &str =
        "INSERT INTO deploy_proof (proof_id, workspace_id, session_id, connector_id, grant_id, runner_id,
        argv_sha256, created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";
    let id = crate::rules::ids::new_id("prf");
    stmt!(INSERT, id, p.workspace_id, p.session_id, p.connector_id, p.grant_id, p.runner_id, p.argv_sha256, p.now_ms)
}

/// Whether the session has a proof of this argv on this connector.
pub async fn exists(db: &dyn Sql, session_id: &str, connector_id: &str, argv_sha256: &str) -> DbResult<bool> {
    const GET: &str = "SELECT 1 AS found FROM deploy_proof
      WHERE session_id = ?1 AND connector_id = ?2 AND argv_sha256 = ?3 LIMIT 1";
    Ok(!db.all(stmt!(GET, session_id, connector_id, argv_sha256)).await?.is_empty())
}
