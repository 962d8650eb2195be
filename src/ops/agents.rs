//! Agents: what can be started in a workspace. Listing, creating, reading and changing one are MCP tools
//! too (a new account sets itself up from a chat client); deleting is REST, for the console, the CLI and
//! scripts.

use crate::cx::Cx;
use crate::error::{ApiError, Code};
use crate::rules::ids::AgentRef;
use crate::rules::params::{Capped, Int, Text};
use crate::rules::{ids, outbound, slug};
use crate::store::{self, agents::AgentFields};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use store::agents::Agent;

pub use crate::rules::harness::{Harness, ToolApproval};
pub use crate::rules::placement::Placement;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListAgents {
    /// A workspace slug from `list_workspaces`; the connection's workspace when left out.
    pub workspace: Option<String>,
    /// Page size (default 100).
    pub limit: Option<Int<1, 200>>,
    /// Agents to skip, for the next page.
    pub offset: Option<i64>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct AgentList {
    pub agents: Vec<store::agents::AgentSummary>,
    /// Pass as `offset` for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<i64>,
}

/// list_agents
pub async fn list(cx: &Cx<'_>, p: ListAgents) -> Result<AgentList, ApiError> {
    let m = cx.workspace(p.workspace.as_deref())?;
    let limit = p.limit.map_or(100, Int::get);
    let offset = p.offset.unwrap_or(0);
    if offset < 0 {
        return Err(ApiError::invalid("`offset` must not be negative"));
    }
    // One row more than the page tells whether another page follows, without a count query.
    let mut agents = store::agents::list(cx.db(), &m.workspace_id, limit + 1, offset).await?;
    let next_offset = (agents.len() as i64 > limit).then(|| {
        agents.truncate(limit as usize);
        offset + limit
    });
    Ok(AgentList { agents, next_offset })
}

/// A remote MCP server an agent may call, as declared when it is created.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpServer {
    /// How the agent's tools name it.
    pub name: Text<1, 40>,
    /// Its Streamable HTTP URL: `https://`, a public host, no credentials in it.
    pub url: Text<1, 2_000>,
    /// A secret of this workspace sent as the bearer token (admins only).
    pub bearer_secret: Option<Text<1, 100>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateAgent {
    /// The workspace to create it in; the connection's workspace when left out.
    pub workspace: Option<String>,
    /// Display name.
    pub name: Text<1, 100>,
    /// Catalog handle without `@`, unique: 2–40 of `a-z`, `0-9`, `-`.
    pub handle: Option<String>,
    /// `echo` (free, for trying), `openai` (OpenAI-compatible), `runner` (your command under `sky runner`),
    /// `claude-code` / `codex` (that CLI under `sky runner`).
    pub harness: Harness,
    /// The model (any label for `echo`).
    pub model: Text<1, 100>,
    /// Standing instructions.
    pub instructions: Option<Text<0, 20_000>>,
    /// What it does, for the catalog.
    pub description: Option<Text<0, 1_000>>,
    /// Catalog categories.
    pub categories: Option<Capped<Text<1, 40>, 10>>,
    /// Remote MCP servers it may call (their hosts show in the catalog).
    #[serde(rename = "mcpServers", alias = "mcp_servers")]
    pub mcp_servers: Option<Capped<McpServer, 10>>,
    /// Listed in every workspace's catalog when true.
    pub is_public: Option<bool>,
    /// Cents one session costs another workspace (public agents).
    pub price_cents_per_run: Option<Int<0, 100_000>>,
    /// `claude-code`/`codex`: which tool uses ask a person first. `outside_folder` (default: edits in the
    /// turn's folder go ahead), `every_change`, or `none` (admins only).
    pub tool_approval: Option<ToolApproval>,
    /// `runner` (default: a person's `sky runner`) or `hosted` (a sandbox per session).
    pub placement: Option<Placement>,
    /// Hosted `runner` agents: one shell line run in the turn's folder, the message on stdin.
    pub command: Option<Text<1, 4_000>>,
    /// Hosted agents: more host names the sandbox may reach (`pypi.org`).
    pub egress: Option<Capped<String, 20>>,
}

/// The validated, stored form of an agent's settable fields.
struct Checked {
    name: String,
    handle: Option<String>,
    harness: String,
    model: String,
    instructions: String,
    description: String,
    categories: String,
    mcp_servers: String,
    /// Whether an MCP server's `bearer_secret` names a secret: such a definition is an admin's.
    names_secret: bool,
    is_public: bool,
    price_cents_per_run: i64,
    tool_approval: ToolApproval,
    placement: Placement,
    command: Option<String>,
    egress: Vec<String>,
}

impl Checked {
    fn fields(&self) -> AgentFields<'_> {
        AgentFields {
            name: &self.name,
            handle: self.handle.as_deref(),
            harness: &self.harness,
            model: &self.model,
            instructions: &self.instructions,
            description: &self.description,
            categories: self.categories.clone(),
            mcp_servers: self.mcp_servers.clone(),
            is_public: self.is_public,
            price_cents_per_run: self.price_cents_per_run,
            tool_approval: self.tool_approval.as_str(),
            placement: self.placement.as_str(),
            command: self.command.as_deref(),
            egress: to_json(&self.egress),
        }
    }
}

/// Validates an agent's fields; `loopback_http` is the deployment's opt-in for local MCP servers.
fn check(p: CreateAgent, loopback_http: bool) -> Result<Checked, ApiError> {
    let handle = p.handle.map(|h| h.trim_start_matches('@').to_owned());
    if let Some(h) = &handle {
        slug::validate("handle", h)?;
    }
    let instructions = p.instructions.map(String::from).unwrap_or_default();
    let description = p.description.map(String::from).unwrap_or_default();
    let categories = p.categories.map(Capped::into_vec).unwrap_or_default();
    let servers = p.mcp_servers.map(Capped::into_vec).unwrap_or_default();
    for s in &servers {
        outbound::check("mcpServers[].url", &s.url, loopback_http).map_err(ApiError::invalid)?;
    }
    let price = p.price_cents_per_run.map_or(0, Int::get);
    let placement = p.placement.unwrap_or(Placement::Runner);
    let command = p.command.map(String::from);
    let egress = p.egress.map(Capped::into_vec).unwrap_or_default();
    crate::rules::placement::check(p.harness, placement, command.as_deref(), &egress).map_err(ApiError::invalid)?;
    Ok(Checked {
        name: p.name.into(),
        handle,
        harness: p.harness.as_str().to_owned(),
        model: p.model.into(),
        instructions,
        description,
        categories: to_json(&categories),
        names_secret: servers.iter().any(|s| s.bearer_secret.is_some()),
        mcp_servers: to_json(&servers),
        is_public: p.is_public.unwrap_or(false),
        price_cents_per_run: price,
        tool_approval: p.tool_approval.unwrap_or(ToolApproval::OutsideFolder),
        placement,
        command,
        egress,
    })
}

/// A validated list as the JSON kept in its TEXT column.
fn to_json<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("lists of strings and plain structs serialize")
}

/// What the secrets role rule calls naming a secret in an agent.
const NAMING: &str = "naming a secret in an agent (`mcpServers[].bearer_secret`)";
/// What the same rule calls an agent whose tools never ask: it runs any command on a runner's machine.
const UNASKED: &str = "letting an agent's tools run without asking (`tool_approval: none`)";

/// Refuses a new hosted placement where this deployment runs no sandboxes, so a person learns it when
/// they set the agent up rather than at its first turn.
fn sandboxes_available(cx: &Cx<'_>) -> Result<(), ApiError> {
    cx.env
        .sandboxes
        .available()
        .map_err(|why| ApiError::new(Code::NotImplemented, crate::rules::placement::unavailable(&why)))
}

fn handle_taken(handle: Option<&str>) -> ApiError {
    ApiError::new(Code::Conflict, format!("the handle `@{}` is taken; choose another", handle.unwrap_or_default()))
}

/// POST /v1/agents
pub async fn create(cx: &Cx<'_>, p: CreateAgent) -> Result<Agent, ApiError> {
    let m = cx.workspace(p.workspace.as_deref())?.clone();
    let checked = check(p, cx.env.config.allow_loopback_http)?;
    if checked.placement == Placement::Hosted {
        sandboxes_available(cx)?;
    }
    if checked.names_secret {
        crate::ops::secrets::require_role(&m, NAMING)?;
    }
    if checked.tool_approval == ToolApproval::None {
        crate::ops::secrets::require_role(&m, UNASKED)?;
    }
    let agent_id = ids::new_id("ag");
    match store::agents::create(cx.db(), &agent_id, &m.workspace_id, &checked.fields(), cx.now_ms).await {
        Ok(agent) => Ok(agent),
        Err(e) if e.is_unique_on("agent.handle") => Err(handle_taken(checked.handle.as_deref())),
        Err(e) => Err(ApiError::cause(e)),
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetAgent {
    /// The agent: its id (`ag_…`) or `@handle`.
    pub agent_id: AgentRef,
    /// Ignored: the workspace is the agent's.
    pub workspace: Option<String>,
}

/// The agent a caller names, by id (`ag_…`) or `@handle`: the one place either is looked up, in any
/// workspace. Callers then check it belongs where the call works ([`load`],
/// [`crate::ops::sessions::resolve_agent`]).
pub async fn named(cx: &Cx<'_>, name: &str) -> Result<Option<Agent>, ApiError> {
    match name.strip_prefix('@') {
        Some(handle) => store::agents::by_handle(cx.db(), handle).await,
        None if ids::is_id(name, "ag") => store::agents::get(cx.db(), name).await,
        None => Ok(None),
    }
    .map_err(ApiError::from)
}

/// Loads an agent of one of the caller's workspaces, by id or `@handle`; anything else is `not_found`.
async fn load(cx: &Cx<'_>, name: &str) -> Result<Agent, ApiError> {
    let not_found =
        || ApiError::new(Code::NotFound, format!("agent `{name}` not found in your workspaces; call list_agents"));
    let agent = named(cx, name).await?.ok_or_else(not_found)?;
    cx.member_of(&agent.workspace_id, "agent").map_err(|e| if e.code == Code::NotFound { not_found() } else { e })?;
    Ok(agent)
}

/// GET /v1/agents/{agent_id}
pub async fn get(cx: &Cx<'_>, p: GetAgent) -> Result<Agent, ApiError> {
    load(cx, &p.agent_id).await
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateAgent {
    /// The agent: its id (`ag_…`) or `@handle`.
    pub agent_id: AgentRef,
    /// A new display name.
    pub name: Option<Text<1, 100>>,
    /// A new catalog handle (without `@`), unique across agentsky.
    pub handle: Option<String>,
    /// `echo`, `openai`, `runner`, `claude-code` or `codex`.
    pub harness: Option<Harness>,
    /// The model the harness runs.
    pub model: Option<Text<1, 100>>,
    /// New standing instructions.
    pub instructions: Option<Text<0, 20_000>>,
    /// What it does, for the catalog.
    pub description: Option<Text<0, 1_000>>,
    /// Catalog categories; replaces the old list.
    pub categories: Option<Capped<Text<1, 40>, 10>>,
    /// Remote MCP servers it may call, up to 10; replaces the old list.
    #[serde(rename = "mcpServers", alias = "mcp_servers")]
    pub mcp_servers: Option<Capped<McpServer, 10>>,
    /// Listed in every workspace's catalog when true.
    pub is_public: Option<bool>,
    /// What one session of it costs a caller from another workspace, in cents (public agents).
    pub price_cents_per_run: Option<Int<0, 100_000>>,
    /// `outside_folder`, `every_change` or `none` (admins only): which tool uses of a `claude-code` or
    /// `codex` agent ask a person first.
    pub tool_approval: Option<ToolApproval>,
    /// `runner` or `hosted`; `runner` drops `command` and `egress`.
    pub placement: Option<Placement>,
    /// Hosted `runner` agents: one shell line run in the turn's folder, the message on stdin.
    pub command: Option<Text<1, 4_000>>,
    /// Hosted agents: more host names the sandbox may reach; replaces the old list.
    pub egress: Option<Capped<String, 20>>,
    /// Ignored: the workspace is the agent's.
    pub workspace: Option<String>,
}

/// The new value, or the stored one held to the same rule again.
fn or_kept<const MIN: usize, const MAX: usize>(
    field: &str,
    new: Option<Text<MIN, MAX>>,
    old: String,
) -> Result<Text<MIN, MAX>, ApiError> {
    new.map_or_else(|| kept(field, old), Ok)
}

/// A stored value held to its parameter's rule again, like [`or_kept`].
fn kept<S, T: TryFrom<S, Error = String>>(field: &str, old: S) -> Result<T, ApiError> {
    T::try_from(old).map_err(|problem| ApiError::invalid(format!("`{field}` {problem}")))
}

/// PATCH /v1/agents/{agent_id}
pub async fn update(cx: &Cx<'_>, p: UpdateAgent) -> Result<Agent, ApiError> {
    let old = load(cx, &p.agent_id).await?;
    let servers: Vec<McpServer> = serde_json::from_value(Value::Array(old.mcp_servers.clone())).unwrap_or_default();
    let old_servers_name_secret = old.mcp_servers.iter().any(|s| s["bearer_secret"].is_string());
    let harness = p.harness.or(Harness::from_word(&old.harness)).ok_or_else(|| cx.internal("a stored harness"))?;
    let placement = p.placement.unwrap_or(Placement::of_word(&old.placement));
    // A kept command and allow list go with a hosted `runner` agent and a hosted agent, not to others.
    let command = match p.command {
        Some(c) => Some(c),
        None if (harness, placement) == (Harness::Runner, Placement::Hosted) => {
            old.command.map(|c| kept("command", c)).transpose()?
        }
        None => None,
    };
    let egress = match p.egress {
        Some(e) => Some(e),
        None if placement == Placement::Hosted => Some(kept("egress", old.egress)?),
        None => None,
    };
    let merged = CreateAgent {
        workspace: None,
        name: or_kept("name", p.name, old.name)?,
        handle: p.handle.or(old.handle),
        harness,
        model: or_kept("model", p.model, old.model)?,
        instructions: Some(or_kept("instructions", p.instructions, old.instructions)?),
        description: Some(or_kept("description", p.description, old.description)?),
        categories: Some(match p.categories {
            Some(c) => c,
            None => kept(
                "categories",
                old.categories.into_iter().map(|c| or_kept("categories[]", None, c)).collect::<Result<Vec<_>, _>>()?,
            )?,
        }),
        mcp_servers: Some(match p.mcp_servers {
            Some(s) => s,
            None => kept("mcpServers", servers)?,
        }),
        is_public: Some(p.is_public.unwrap_or(old.is_public)),
        price_cents_per_run: Some(match p.price_cents_per_run {
            Some(n) => n,
            None => kept("price_cents_per_run", old.price_cents_per_run)?,
        }),
        tool_approval: p.tool_approval.or(ToolApproval::from_word(&old.tool_approval)),
        placement: Some(placement),
        command,
        egress,
    };
    let checked = check(merged, cx.env.config.allow_loopback_http)?;
    if checked.placement == Placement::Hosted && old.placement != Placement::Hosted.as_str() {
        sandboxes_available(cx)?;
    }
    // A definition that names a secret (before or after) is changed by admins only: otherwise a member
    // could point an admin's named secret at a URL of their own.
    if checked.names_secret || old_servers_name_secret {
        crate::ops::secrets::require_role(cx.member_of(&old.workspace_id, "agent")?, NAMING)?;
    }
    // Changing an agent whose tools never ask, or making one, is an admin's.
    if checked.tool_approval == ToolApproval::None || old.tool_approval == ToolApproval::None.as_str() {
        crate::ops::secrets::require_role(cx.member_of(&old.workspace_id, "agent")?, UNASKED)?;
    }
    match store::agents::update(cx.db(), &old.agent_id, &old.workspace_id, &checked.fields(), cx.now_ms).await {
        Ok(Some(agent)) => Ok(agent),
        Ok(None) => Err(ApiError::not_found("agent")),
        Err(e) if e.is_unique_on("agent.handle") => Err(handle_taken(checked.handle.as_deref())),
        Err(e) => Err(ApiError::cause(e)),
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteAgent {
    /// The agent: its id (`ag_…`) or `@handle`.
    pub agent_id: AgentRef,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct AgentDeleted {
    pub agent_id: String,
    pub deleted: bool,
}

/// DELETE /v1/agents/{agent_id}
pub async fn delete(cx: &Cx<'_>, p: DeleteAgent) -> Result<AgentDeleted, ApiError> {
    let agent = load(cx, &p.agent_id).await?;
    let deleted = store::agents::delete(cx.db(), &agent.agent_id, &agent.workspace_id).await?;
    Ok(AgentDeleted { agent_id: agent.agent_id, deleted })
}
