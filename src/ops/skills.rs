//! Company skills: named Markdown documents in the Agent Skills layout (a `SKILL.md` with `name` and
//! `description` front matter, optional files beside it) that every session of the workspace gets. The
//! openai harness lists them and reads one on demand; a runner writes them where its CLI reads skills.
//!
//! They steer every agent of the workspace, so saving and deleting one takes an owner or admin.

use crate::cx::{Cx, Role};
use crate::domain::taskfs::TaskPath;
use crate::error::{ApiError, Code};
use crate::rules::params::{CappedMap, Text};
use crate::rules::skills::{self as rule, SKILL_FILE};
use crate::store::{self, skills::SkillRow, skills::SkillSummary};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Largest `SKILL.md` or extra file, in characters.
pub const MAX_FILE_CHARS: usize = 64 * 1024;
/// Most extra files beside `SKILL.md`.
pub const MAX_FILES: usize = 20;
/// A skill's extra files: relative path → text.
pub type SkillFiles = CappedMap<TaskPath, Text<0, MAX_FILE_CHARS>, MAX_FILES>;

/// Largest skill, all its files together, in characters.
pub const MAX_SKILL_CHARS: usize = 256 * 1024;

fn check_name(name: &str) -> Result<(), ApiError> {
    if rule::is_name(name) {
        return Ok(());
    }
    Err(ApiError::invalid(format!(
        "`name` must be 1–{} lowercase letters, digits and single hyphens, not starting or ending with one, and not a \
         Windows device name like `con` (got {})",
        rule::MAX_NAME_CHARS,
        crate::rules::params::quoted(name)
    )))
}

/// Checks a skill as it would be saved; returns its description and its files with normalised paths.
pub fn check(name: &str, skill_md: &str, files: SkillFiles) -> Result<(String, BTreeMap<String, String>), ApiError> {
    check_name(name)?;
    let fm = rule::front_matter(skill_md).map_err(|why| ApiError::invalid(format!("`skill_md`: {why}")))?;
    if fm.name != name {
        return Err(ApiError::invalid(format!(
            "`skill_md`: the front matter's `name` ({}) must be the skill's name ({})",
            crate::rules::params::quoted(&fm.name),
            crate::rules::params::quoted(name)
        )));
    }
    let mut normal = BTreeMap::new();
    let mut total = skill_md.chars().count();
    for (path, text) in files.into_map() {
        let p = path.as_str().to_owned();
        if p.eq_ignore_ascii_case(SKILL_FILE) {
            return Err(ApiError::invalid(format!("`files` must not hold `{SKILL_FILE}`; pass it as `skill_md`")));
        }
        total += text.chars().count();
        normal.insert(p, text.into_string());
    }
    if total > MAX_SKILL_CHARS {
        return Err(ApiError::invalid(format!("a skill may hold at most {MAX_SKILL_CHARS} characters (got {total})")));
    }
    Ok((fm.description, normal))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PutSkill {
    /// The skill's name: 1–64 lowercase letters, digits and hyphens, like `release-notes`, not a Windows
    /// device name (`con`, `nul`, `com1`, …). It must match the `name` in the front matter.
    pub name: String,
    /// The whole `SKILL.md`: YAML front matter with `name` and `description` (up to 1,024 characters:
    /// what it does and when to use it) between `---` lines, then the instructions in Markdown.
    pub skill_md: Text<1, MAX_FILE_CHARS>,
    /// Extra files beside `SKILL.md` (scripts, references, templates): relative path → text. Up to 20.
    pub files: Option<SkillFiles>,
    /// A workspace slug from `list_workspaces`; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SkillSaved {
    pub name: String,
    pub description: String,
    /// True when the skill is new, false when it replaced one of the same name.
    pub created: bool,
    pub workspace: String,
}

/// put_skill — owners and admins.
pub async fn put(cx: &Cx<'_>, p: PutSkill) -> Result<SkillSaved, ApiError> {
    let (description, files) = check(&p.name, &p.skill_md, p.files.unwrap_or_default())?;
    let w = cx.workspace(p.workspace.as_deref())?;
    cx.require_role(w, Role::Admin)?;
    let by = format!("key:{}", cx.caller()?.key_id);
    let files_json = serde_json::to_string(&files).map_err(ApiError::cause)?;
    let created =
        store::skills::put(cx.db(), &w.workspace_id, &p.name, &description, &p.skill_md, &files_json, &by, cx.now_ms)
            .await?;
    Ok(SkillSaved { name: p.name, description, created, workspace: w.slug.clone() })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListSkills {
    /// A workspace slug from `list_workspaces`; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SkillList {
    /// By name: each skill's name and description (what an agent reads to decide whether to open it).
    pub skills: Vec<SkillSummary>,
}

/// list_skills
pub async fn list(cx: &Cx<'_>, p: ListSkills) -> Result<SkillList, ApiError> {
    let w = cx.workspace(p.workspace.as_deref())?;
    let skills = store::skills::list(cx.db(), &w.workspace_id).await?;
    Ok(SkillList { skills })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetSkill {
    /// The skill's name.
    pub name: String,
    /// A workspace slug from `list_workspaces`; the connection's workspace when left out.
    pub workspace: Option<String>,
}

fn not_found(name: &str) -> ApiError {
    ApiError::new(Code::NotFound, format!("no skill `{name}` in this workspace; `list_skills` shows its skills"))
}

/// get_skill
pub async fn get(cx: &Cx<'_>, p: GetSkill) -> Result<SkillRow, ApiError> {
    let w = cx.workspace(p.workspace.as_deref())?;
    store::skills::get(cx.db(), &w.workspace_id, &p.name).await?.ok_or_else(|| not_found(&p.name))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteSkill {
    /// The skill's name.
    pub name: String,
    /// A workspace slug from `list_workspaces`; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SkillDeleted {
    pub name: String,
    pub deleted: bool,
}

/// delete_skill — owners and admins.
pub async fn delete(cx: &Cx<'_>, p: DeleteSkill) -> Result<SkillDeleted, ApiError> {
    let w = cx.workspace(p.workspace.as_deref())?;
    cx.require_role(w, Role::Admin)?;
    if !store::skills::delete(cx.db(), &w.workspace_id, &p.name).await? {
        return Err(not_found(&p.name));
    }
    Ok(SkillDeleted { name: p.name, deleted: true })
}
