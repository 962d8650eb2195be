//! Company skills: a workspace's `SKILL.md` documents and the files beside them.

use super::{first, rows, DbResult, Sql};
use crate::stmt;
use serde::{Deserialize, Serialize};

/// A skill as listed: what a model or a person reads to decide whether to open it.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SkillSummary {
    pub name: String,
    pub description: String,
    pub updated_by: String,
    pub updated_ms: i64,
}

/// A skill in full.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SkillRow {
    pub name: String,
    pub description: String,
    /// The whole `SKILL.md`, front matter included.
    pub skill_md: String,
    /// The extra files beside `SKILL.md`: relative path → text.
    #[serde(deserialize_with = "super::json_text")]
    #[schemars(with = "std::collections::BTreeMap<String, String>")]
    pub files: std::collections::BTreeMap<String, String>,
    pub updated_by: String,
    pub created_ms: i64,
    pub updated_ms: i64,
}

const EXISTS: &str = "SELECT 1 AS found FROM skill WHERE workspace_id = ?1 AND name = ?2";

const PUT: &str =
    "INSERT INTO skill (workspace_id, name, description, skill_md, files, updated_by, created_ms, updated_ms)
  VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)
  ON CONFLICT (workspace_id, name) DO UPDATE SET description = excluded.description, skill_md = excluded.skill_md,
    files = excluded.files, updated_by = excluded.updated_by, updated_ms = excluded.updated_ms";

/// Creates or replaces a skill; true when it is new (told in the same atomic batch as the write).
#[allow(clippy::too_many_arguments)]
pub async fn put(
    db: &dyn Sql,
    workspace_id: &str,
    name: &str,
    description: &str,
    skill_md: &str,
    files_json: &str,
    updated_by: &str,
    now_ms: i64,
) -> DbResult<bool> {
    let results = db
        .batch(vec![
            stmt!(EXISTS, workspace_id, name),
            stmt!(PUT, workspace_id, name, description, skill_md, files_json, updated_by, now_ms),
        ])
        .await?;
    Ok(results.first().is_none_or(Vec::is_empty))
}

const LIST: &str = "SELECT name, description, updated_by, updated_ms FROM skill WHERE workspace_id = ?1
  ORDER BY name LIMIT 500";

pub async fn list(db: &dyn Sql, workspace_id: &str) -> DbResult<Vec<SkillSummary>> {
    rows(db, stmt!(LIST, workspace_id)).await
}

const GET: &str = "SELECT name, description, skill_md, files, updated_by, created_ms, updated_ms FROM skill
  WHERE workspace_id = ?1 AND name = ?2";

pub async fn get(db: &dyn Sql, workspace_id: &str, name: &str) -> DbResult<Option<SkillRow>> {
    first(db, stmt!(GET, workspace_id, name)).await
}

const ALL: &str = "SELECT name, description, skill_md, files, updated_by, created_ms, updated_ms FROM skill
  WHERE workspace_id = ?1 ORDER BY name LIMIT 500";

/// Every skill in full: what a runner writes into a turn's folder.
pub async fn all(db: &dyn Sql, workspace_id: &str) -> DbResult<Vec<SkillRow>> {
    rows(db, stmt!(ALL, workspace_id)).await
}

const DELETE: &str = "DELETE FROM skill WHERE workspace_id = ?1 AND name = ?2 RETURNING name";

pub async fn delete(db: &dyn Sql, workspace_id: &str, name: &str) -> DbResult<bool> {
    Ok(!db.all(stmt!(DELETE, workspace_id, name)).await?.is_empty())
}
