//! Artifacts (published snapshots of task files) and the share links of artifacts and sessions. Link
//! tokens are stored only as hashes.

use super::{first, rows, DbResult, Sql};
use crate::stmt;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ArtifactRow {
    pub artifact_id: String,
    #[serde(skip_serializing, default)]
    pub workspace_id: String,
    pub task_id: String,
    pub name: String,
    /// The task file it snapshots, and which version.
    pub path: String,
    pub version: i64,
    pub content_type: String,
    pub size_bytes: i64,
    pub sha256: String,
    /// Whether a public link is on.
    #[serde(deserialize_with = "super::int_bool")]
    pub shared: bool,
    pub created_ms: i64,
}

pub struct NewArtifact<'a> {
    pub artifact_id: &'a str,
    pub workspace_id: &'a str,
    pub task_id: &'a str,
    pub name: &'a str,
    pub path: &'a str,
    pub version: i64,
    pub content_type: &'a str,
    pub size_bytes: i64,
    pub sha256: &'a str,
    pub key_id: &'a str,
    pub now_ms: i64,
}

const INSERT: &str =
    "INSERT INTO artifact (artifact_id, workspace_id, task_id, name, path, version, content_type, size_bytes, sha256,
    published_by_key_id, created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
  RETURNING artifact_id, workspace_id, task_id, name, path, version, content_type, size_bytes, sha256,
    share_hash IS NOT NULL AS shared, created_ms";

pub async fn insert(db: &dyn Sql, a: &NewArtifact<'_>) -> DbResult<ArtifactRow> {
    let row = first(
        db,
        stmt!(
            INSERT,
            a.artifact_id,
            a.workspace_id,
            a.task_id,
            a.name,
            a.path,
            a.version,
            a.content_type,
            a.size_bytes,
            a.sha256,
            a.key_id,
            a.now_ms
        ),
    )
    .await?;
    row.ok_or_else(|| super::DbError::Other("insert returned no row".into()))
}

pub async fn get(db: &dyn Sql, artifact_id: &str) -> DbResult<Option<ArtifactRow>> {
    const GET: &str =
        "SELECT artifact_id, workspace_id, task_id, name, path, version, content_type, size_bytes, sha256,
        share_hash IS NOT NULL AS shared, created_ms FROM artifact WHERE artifact_id = ?1";
    first(db, stmt!(GET, artifact_id)).await
}

/// A workspace's artifacts, or one task's, newest first.
pub async fn list(db: &dyn Sql, workspace_id: &str, task_id: Option<&str>, limit: i64) -> DbResult<Vec<ArtifactRow>> {
    const LIST: &str =
        "SELECT artifact_id, workspace_id, task_id, name, path, version, content_type, size_bytes, sha256,
        share_hash IS NOT NULL AS shared, created_ms FROM artifact
      WHERE workspace_id = ?1 AND (?2 IS NULL OR task_id = ?2) ORDER BY created_ms DESC, artifact_id DESC LIMIT ?3";
    rows(db, stmt!(LIST, workspace_id, task_id, limit)).await
}

/// Sets (or with `None` clears) an artifact's link hash.
pub async fn set_share(db: &dyn Sql, artifact_id: &str, hash: Option<&str>) -> DbResult<()> {
    const SET: &str = "UPDATE artifact SET share_hash = ?2 WHERE artifact_id = ?1";
    db.all(stmt!(SET, artifact_id, hash)).await.map(drop)
}

/// The artifact behind a link.
pub async fn by_share(db: &dyn Sql, hash: &str) -> DbResult<Option<ArtifactRow>> {
    const BY: &str = "SELECT artifact_id, workspace_id, task_id, name, path, version, content_type, size_bytes, sha256,
        share_hash IS NOT NULL AS shared, created_ms FROM artifact WHERE share_hash = ?1";
    first(db, stmt!(BY, hash)).await
}

/// Sets (or clears) a session's link hash and whether the link is read-only.
pub async fn set_session_share(db: &dyn Sql, session_id: &str, hash: Option<&str>, view_only: bool) -> DbResult<()> {
    const SET: &str = "UPDATE session SET share_hash = ?2, share_view_only = ?3 WHERE session_id = ?1";
    db.all(stmt!(SET, session_id, hash, view_only)).await.map(drop)
}

#[derive(Debug, Clone, Deserialize)]
pub struct SharedSession {
    pub session_id: String,
    pub title: String,
    pub agent_name: String,
    pub status: super::sessions::SessionStatus,
    #[serde(deserialize_with = "super::int_bool")]
    pub share_view_only: bool,
}

/// The session behind a link.
pub async fn session_by_share(db: &dyn Sql, hash: &str) -> DbResult<Option<SharedSession>> {
    const BY: &str = "SELECT session_id, title, agent_name, status, share_view_only FROM session WHERE share_hash = ?1";
    first(db, stmt!(BY, hash)).await
}
