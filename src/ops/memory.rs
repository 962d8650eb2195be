//! Memory: short notes an account keeps for later (what `search_context` searches first). Saved and
//! deleted over REST by people and scripts, and by agents through the two harness tools below.
//!
//! An entry belongs to an account and is tagged with the workspace it was saved in; a key locked to a
//! workspace sees only that workspace's entries. Its id is derived from its owner, workspace and text, so
//! saving the same note twice (a retried call, an agent repeating itself) keeps one entry.
//!
//! Wiring the agent tools (for `session/agent_tools.rs`): append [`agent_tool_specs`] to `specs()`, and in
//! `run()` send names for which [`is_agent_tool`] holds to [`run_agent_tool`]`(db, config, name, args,
//! now_ms)`, which returns the same `Result<Value, String>` as the file tools.

use crate::cx::Cx;
use crate::error::{ApiError, Code};
use crate::ops::context;
use crate::rules::ids::MemoryId;
use crate::rules::params::{self, Int, Text};
use crate::rules::schema::Published;
use crate::rules::{cursor, fingerprint};
use crate::session::SessionConfig;
use crate::store::{self, context::MemoryRow, Sql};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// Longest memory entry, in characters.
pub const MAX_MEMORY_CHARS: usize = 8_000;

/// The id of an account's note in a workspace: the same text saved again is the same entry.
fn memory_id(account_id: &str, workspace_id: &str, text: &str) -> String {
    // 104 bits of a SHA-256 in hex, whose digits are all in the id alphabet.
    let digest = fingerprint::of_arguments(&json!([account_id, workspace_id, text]));
    format!("mem_{}", &digest[..26])
}

/// Saves an entry (or finds it saved already) and returns it.
async fn save_entry(
    db: &dyn Sql,
    account_id: &str,
    workspace_id: &str,
    text: &str,
    author: &str,
    now_ms: i64,
) -> Result<MemoryRow, String> {
    let id = memory_id(account_id, workspace_id, text);
    let title: String =
        text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default().chars().take(120).collect();
    let source = store::context::Source {
        scope: "memory",
        workspace_id,
        account_id: Some(account_id),
        source_id: &id,
        title: &title,
        author: Some(author),
        only_if_trace: None,
    };
    let doc = store::context::Doc { seq: 0, role: "memory".into(), text: text.to_owned(), at_ms: now_ms };
    db.batch(store::context::add_docs(&source, &[doc])).await.map_err(|e| e.to_string())?;
    let row = store::context::doc(db, "memory", &id, 0).await.map_err(|e| e.to_string())?;
    let row = row.ok_or("the entry vanished after it was saved")?;
    Ok(MemoryRow {
        memory_id: row.source_id,
        workspace_id: row.workspace_id,
        text: row.body,
        saved_by: row.author.unwrap_or_default(),
        created_ms: row.created_ms,
    })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveMemory {
    /// The note, 1–8,000 characters: a fact, a preference, a decision worth finding later.
    pub text: Text<1, MAX_MEMORY_CHARS>,
    /// A workspace slug from `list_workspaces`; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct MemoryEntry {
    #[serde(flatten)]
    pub entry: MemoryRow,
    /// The workspace's slug.
    pub workspace: String,
}

/// save_memory
pub async fn save(cx: &Cx<'_>, p: SaveMemory) -> Result<MemoryEntry, ApiError> {
    if p.text.trim().is_empty() {
        return Err(ApiError::invalid("`text` must not be blank"));
    }
    let w = cx.workspace(p.workspace.as_deref())?;
    let caller = cx.caller()?;
    let author = format!("key:{}", caller.key_id);
    let entry = save_entry(cx.db(), &caller.account_id, &w.workspace_id, &p.text, &author, cx.now_ms)
        .await
        .map_err(ApiError::cause)?;
    Ok(MemoryEntry { entry, workspace: w.slug.clone() })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListMemory {
    /// Only the entries saved in this workspace (default: every workspace the key may see).
    pub workspace: Option<String>,
    /// Page size (default 50).
    pub limit: Option<Int<1, 200>>,
    /// `next_cursor` from the previous page.
    pub cursor: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct MemoryList {
    /// Newest first.
    pub entries: Vec<MemoryEntry>,
    /// Pass as `cursor` for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

fn with_slug(cx: &Cx<'_>, entry: MemoryRow) -> MemoryEntry {
    MemoryEntry { workspace: context::slug_of(cx, &entry.workspace_id), entry }
}

/// list_memory
pub async fn list(cx: &Cx<'_>, p: ListMemory) -> Result<MemoryList, ApiError> {
    let limit = p.limit.map_or(50, Int::get);
    let before = cursor::parse_keyset(p.cursor.as_deref())?;
    let workspaces = context::visible_workspaces(cx, p.workspace.as_deref())?;
    let caller = cx.caller()?;
    let mut rows = store::context::memory(cx.db(), &caller.account_id, &workspaces, before, limit + 1).await?;
    let next_cursor = (rows.len() as i64 > limit).then(|| {
        rows.truncate(limit as usize);
        let last = rows.last().expect("a full page has a last row");
        cursor::keyset(last.created_ms, &last.memory_id)
    });
    Ok(MemoryList { entries: rows.into_iter().map(|r| with_slug(cx, r)).collect(), next_cursor })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteMemory {
    /// The entry (`mem_…`).
    pub memory_id: MemoryId,
    /// Ignored: entries are found by id among yours.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct MemoryDeleted {
    pub memory_id: String,
    pub deleted: bool,
}

/// delete_memory
pub async fn delete(cx: &Cx<'_>, p: DeleteMemory) -> Result<MemoryDeleted, ApiError> {
    let not_found = || ApiError::new(Code::NotFound, format!("memory entry `{}` not found among yours", p.memory_id));
    let workspaces = context::visible_workspaces(cx, None)?;
    let caller = cx.caller()?;
    let deleted = store::context::delete_memory(cx.db(), &p.memory_id, &caller.account_id, &workspaces).await?;
    if !deleted {
        return Err(not_found());
    }
    Ok(MemoryDeleted { memory_id: p.memory_id.into(), deleted })
}

/// What an agent's `save_memory` takes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveNote {
    /// The note.
    pub text: Text<1, MAX_MEMORY_CHARS>,
}

/// What an agent's `delete_memory` takes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteNote {
    /// The `memory_id` `save_memory` returned.
    pub memory_id: MemoryId,
}

/// The agent tools: name, description, and the schema of their parameters.
const AGENT_TOOLS: [(&str, &str, Published); 2] = [
    (
        "save_memory",
        "Save a short note to the memory of the person you work for (a fact, a preference, a decision), so later sessions can find it with search_context. Saving the same text again keeps one entry.",
        Published::input::<SaveNote>(),
    ),
    (
        "delete_memory",
        "Delete a memory entry that is wrong or outdated, by the memory_id save_memory returned.",
        Published::input::<DeleteNote>(),
    ),
];

fn schema_key(tool: &str) -> String {
    format!("model_tool:{tool}")
}

/// The agent tools' schemas as published (`src/schemas.json`), derived from their types.
#[cfg(not(target_arch = "wasm32"))]
pub fn published_schemas() -> Vec<(String, Value)> {
    AGENT_TOOLS.iter().map(|(name, _, schema)| (schema_key(name), schema.get(&schema_key(name)))).collect()
}

/// The agent tools' specs in the OpenAI function-calling shape; the parameters are the types' schemas,
/// as the model reads them (without `$schema`).
pub fn agent_tool_specs() -> Vec<Value> {
    let spec = |(name, description, schema): &(&str, &str, Published)| {
        let parameters = schema.for_model(&schema_key(name));
        json!({"type": "function", "function": {"name": name, "description": description, "parameters": parameters}})
    };
    AGENT_TOOLS.iter().map(spec).collect()
}

pub fn is_agent_tool(name: &str) -> bool {
    matches!(name, "save_memory" | "delete_memory")
}

/// Runs an agent's memory tool for its session: entries belong to the account whose key started the
/// session (else the workspace's owner), in the session's workspace. `Err` is text for the model.
pub async fn run_agent_tool(
    db: &dyn Sql,
    config: &SessionConfig,
    name: &str,
    args: &Value,
    now_ms: i64,
) -> Result<Value, String> {
    let owner = store::context::session_owner(db, config.started_by_key_id.as_deref(), &config.workspace_id)
        .await
        .map_err(|e| e.to_string())?
        .ok_or("this session has no owner to keep memory for")?;
    match name {
        "save_memory" => {
            let p: SaveNote = params::decode(args.clone())?;
            let author = format!("session:{}", config.session_id);
            let entry = save_entry(db, &owner, &config.workspace_id, &p.text, &author, now_ms).await?;
            Ok(json!({ "memory_id": entry.memory_id, "saved": true }))
        }
        "delete_memory" => {
            let p: DeleteNote = params::decode(args.clone())?;
            let workspaces = [config.workspace_id.clone()];
            let deleted = store::context::delete_memory(db, &p.memory_id, &owner, &workspaces)
                .await
                .map_err(|e| e.to_string())?;
            if deleted {
                Ok(json!({ "memory_id": p.memory_id, "deleted": true }))
            } else {
                Err(format!("no memory entry `{}`", p.memory_id))
            }
        }
        other => Err(format!("no tool `{other}`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::ids;

    #[test]
    fn the_same_note_of_the_same_owner_has_the_same_id() {
        let a = memory_id("acc_1", "ws_1", "likes tabs");
        assert!(ids::is_id(&a, "mem"), "{a}");
        assert_eq!(a, memory_id("acc_1", "ws_1", "likes tabs"));
        assert_ne!(a, memory_id("acc_2", "ws_1", "likes tabs"));
        assert_ne!(a, memory_id("acc_1", "ws_1", "likes spaces"));
    }
}
