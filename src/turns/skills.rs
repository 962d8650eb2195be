//! The workspace's company skills in an openai-harness turn: listed by name and description in the
//! instructions, and read on demand with the built-in `read_skill` tool (the progressive disclosure Agent
//! Skills are written for: a model pays for a skill's body only when a task calls for it).

use crate::store::{self, skills::SkillSummary, Sql};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

/// The built-in tool that reads one skill (a row of `builtin_tools!`).
pub const TOOL: &str = "read_skill";

/// The workspace's skills, by name.
pub async fn listing(db: &dyn Sql, workspace_id: &str) -> Result<Vec<SkillSummary>, String> {
    store::skills::list(db, workspace_id).await.map_err(|e| format!("reading the workspace's skills: {e}"))
}

/// Appends the skills' names and descriptions to the system message (the first of `messages`).
pub fn mention(messages: &mut Value, skills: &[SkillSummary]) {
    if skills.is_empty() {
        return;
    }
    let lines: Vec<String> = skills.iter().map(|s| format!("- {}: {}", s.name, s.description)).collect();
    let listing = format!(
        "\n\nCompany skills of this workspace. When a task matches one's description, call {TOOL} with its name \
         first and follow it:\n{}",
        lines.join("\n")
    );
    if let Some(Value::String(text)) = messages.get_mut(0).and_then(|m| m.get_mut("content")) {
        text.push_str(&listing);
    }
}

/// What `read_skill` takes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadSkill {
    /// The skill's name, from the list in your instructions.
    pub name: String,
    /// A file beside SKILL.md, by its relative path.
    pub file: Option<String>,
}

/// Runs `read_skill`; `Err` is text for the model.
pub async fn read(db: &dyn Sql, workspace_id: &str, p: ReadSkill) -> Result<Value, String> {
    let name = p.name.as_str();
    let skill = store::skills::get(db, workspace_id, name)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("no skill `{name}` in this workspace"))?;
    match p.file.as_deref() {
        None => {
            Ok(json!({"name": skill.name, "skill_md": skill.skill_md, "files": skill.files.keys().collect::<Vec<_>>()}))
        }
        Some(path) => {
            let content = skill.files.get(path).ok_or_else(|| format!("skill `{name}` has no file `{path}`"))?;
            Ok(json!({"name": skill.name, "file": path, "content": content}))
        }
    }
}
