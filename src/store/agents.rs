//! Agents: what can be started in a workspace, and what the catalog shows of it.

use super::{first, rows, DbResult, Sql};
use crate::stmt;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An agent as stored and as `get_agent` returns it.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Agent {
    pub agent_id: String,
    pub workspace_id: String,
    pub name: String,
    /// `@handle` without the `@`, unique across agentsky.
    pub handle: Option<String>,
    pub harness: String,
    pub model: String,
    pub instructions: String,
    pub description: String,
    #[serde(deserialize_with = "super::json_text")]
    pub categories: Vec<String>,
    /// Remote MCP servers the agent may call: `{ name, url, bearer_secret? }`.
    #[serde(deserialize_with = "super::json_text")]
    pub mcp_servers: Vec<Value>,
    #[serde(deserialize_with = "super::int_bool")]
    pub is_public: bool,
    pub price_cents_per_run: i64,
    /// Which tool uses of a `claude-code` or `codex` agent ask a person first: `outside_folder`,
    /// `every_change` or `none`.
    pub tool_approval: String,
    /// Where its turns run: `runner` (a person's `sky runner`) or `hosted` (a sandbox agentsky starts).
    pub placement: String,
    /// The shell line a hosted `runner` agent's sandbox runs in the turn's folder, the message on stdin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Host names a hosted agent's sandbox may reach besides the defaults.
    #[serde(deserialize_with = "super::json_text")]
    pub egress: Vec<String>,
    pub session_count: i64,
    pub created_ms: i64,
    pub updated_ms: i64,
}

/// The fields a caller sets; `categories` and `mcp_servers` arrive already validated.
pub struct AgentFields<'a> {
    pub name: &'a str,
    pub handle: Option<&'a str>,
    pub harness: &'a str,
    pub model: &'a str,
    pub instructions: &'a str,
    pub description: &'a str,
    pub categories: String,
    pub mcp_servers: String,
    pub is_public: bool,
    pub price_cents_per_run: i64,
    pub tool_approval: &'a str,
    pub placement: &'a str,
    pub command: Option<&'a str>,
    /// A JSON list of host names.
    pub egress: String,
}

const INSERT: &str = "INSERT INTO agent (agent_id, workspace_id, name, handle, harness, model, instructions, description,
    categories, mcp_servers, is_public, price_cents_per_run, tool_approval, placement, command, egress, created_ms,
    updated_ms)
  VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?14, ?15, ?16, ?17, ?13, ?13)
  RETURNING agent_id, workspace_id, name, handle, harness, model, instructions, description, categories, mcp_servers, is_public, price_cents_per_run, tool_approval, placement, command, egress, session_count, created_ms, updated_ms";

/// The statement `sql` (`INSERT` or `UPDATE`, which take the same `?1` … `?17`) for these fields.
fn bound(sql: &'static str, agent_id: &str, workspace_id: &str, f: &AgentFields<'_>, now_ms: i64) -> super::Stmt {
    stmt!(
        sql,
        agent_id,
        workspace_id,
        f.name,
        f.handle,
        f.harness,
        f.model,
        f.instructions,
        f.description,
        f.categories.as_str(),
        f.mcp_servers.as_str(),
        f.is_public,
        f.price_cents_per_run,
        now_ms,
        f.tool_approval,
        f.placement,
        f.command,
        f.egress.as_str()
    )
}

pub async fn create(
    db: &dyn Sql,
    agent_id: &str,
    workspace_id: &str,
    f: &AgentFields<'_>,
    now_ms: i64,
) -> DbResult<Agent> {
    let row = first(db, bound(INSERT, agent_id, workspace_id, f, now_ms)).await?;
    row.ok_or_else(|| super::DbError::Other("insert returned no row".into()))
}

const UPDATE: &str = "UPDATE agent SET name = ?3, handle = ?4, harness = ?5, model = ?6, instructions = ?7, description = ?8,
    categories = ?9, mcp_servers = ?10, is_public = ?11, price_cents_per_run = ?12, tool_approval = ?14,
    placement = ?15, command = ?16, egress = ?17, updated_ms = ?13
  WHERE agent_id = ?1 AND workspace_id = ?2
  RETURNING agent_id, workspace_id, name, handle, harness, model, instructions, description, categories, mcp_servers, is_public, price_cents_per_run, tool_approval, placement, command, egress, session_count, created_ms, updated_ms";

pub async fn update(
    db: &dyn Sql,
    agent_id: &str,
    workspace_id: &str,
    f: &AgentFields<'_>,
    now_ms: i64,
) -> DbResult<Option<Agent>> {
    first(db, bound(UPDATE, agent_id, workspace_id, f, now_ms)).await
}

const GET: &str = "SELECT agent_id, workspace_id, name, handle, harness, model, instructions, description, categories,
    mcp_servers, is_public, price_cents_per_run, tool_approval, placement, command, egress, session_count, created_ms, updated_ms
  FROM agent WHERE agent_id = ?1";

const BY_HANDLE: &str =
    "SELECT agent_id, workspace_id, name, handle, harness, model, instructions, description, categories,
    mcp_servers, is_public, price_cents_per_run, tool_approval, placement, command, egress, session_count, created_ms, updated_ms
  FROM agent WHERE handle = ?1";

/// One agent by `@handle` (without the `@`), in any workspace.
pub async fn by_handle(db: &dyn Sql, handle: &str) -> DbResult<Option<Agent>> {
    first(db, stmt!(BY_HANDLE, handle)).await
}

/// One agent by id, in any workspace: callers check membership of `workspace_id` themselves.
pub async fn get(db: &dyn Sql, agent_id: &str) -> DbResult<Option<Agent>> {
    first(db, stmt!(GET, agent_id)).await
}

/// What `list_agents` shows: the contract's fields.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentSummary {
    pub id: String,
    pub name: String,
    /// `@handle` to pass as `agent_id`, when it has one.
    pub handle: Option<String>,
    pub harness: String,
    pub model: String,
    /// `runner` or `hosted`.
    pub placement: String,
    /// A hosted `runner` agent's command, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Host names its sandbox may reach besides the defaults (hosted agents).
    #[serde(deserialize_with = "super::json_text")]
    pub egress: Vec<String>,
    pub session_count: i64,
}

pub(crate) const LIST: &str =
    "SELECT agent_id AS id, name, '@' || handle AS handle, harness, model, placement, command, egress,
    session_count FROM agent
  WHERE workspace_id = ?1 ORDER BY created_ms DESC, agent_id LIMIT ?2 OFFSET ?3";

pub async fn list(db: &dyn Sql, workspace_id: &str, limit: i64, offset: i64) -> DbResult<Vec<AgentSummary>> {
    rows(db, stmt!(LIST, workspace_id, limit, offset)).await
}

const DELETE: &str = "DELETE FROM agent WHERE agent_id = ?1 AND workspace_id = ?2 RETURNING agent_id";

pub async fn delete(db: &dyn Sql, agent_id: &str, workspace_id: &str) -> DbResult<bool> {
    Ok(!db.all(stmt!(DELETE, agent_id, workspace_id)).await?.is_empty())
}

const CATALOG: &str =
    "SELECT agent_id, workspace_id, name, handle, harness, model, instructions, description, categories,
    mcp_servers, is_public, price_cents_per_run, tool_approval, placement, command, egress, session_count, created_ms, updated_ms
  FROM agent WHERE workspace_id = ?1 OR is_public = 1 ORDER BY session_count DESC, created_ms DESC LIMIT 1000";

/// Every agent a workspace can start: its own and the public ones.
pub async fn catalog(db: &dyn Sql, workspace_id: &str) -> DbResult<Vec<Agent>> {
    rows(db, stmt!(CATALOG, workspace_id)).await
}
