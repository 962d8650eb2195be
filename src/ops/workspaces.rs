//! Workspaces: listing, creating, deleting, and the live description an MCP client reads first. Who
//! belongs to one is [`super::members`].

use crate::cx::{Cx, Role};
use crate::error::{ApiError, Code};
use crate::ops::{help_guides, Scope, OPS};
use crate::rules::params::Text;
use crate::rules::{ids, slug};
use crate::store;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListWorkspaces {}

#[derive(Debug, Serialize, JsonSchema)]
pub struct WorkspaceList {
    pub workspaces: Vec<WorkspaceItem>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct WorkspaceItem {
    pub slug: String,
    pub name: String,
    pub role: Role,
    pub is_personal: bool,
    /// The workspace calls use when they name none.
    pub is_current: bool,
}

/// list_workspaces: answered from the memberships read with the key, without another query.
pub async fn list(cx: &Cx<'_>, _: ListWorkspaces) -> Result<WorkspaceList, ApiError> {
    let caller = cx.caller()?;
    let current = cx.workspace(None).ok().map(|m| m.workspace_id.clone());
    let workspaces = caller
        .memberships
        .iter()
        .filter(|m| caller.locked_workspace_id.as_ref().is_none_or(|l| l == &m.workspace_id))
        .map(|m| WorkspaceItem {
            slug: m.slug.clone(),
            name: m.name.clone(),
            role: m.role,
            is_personal: m.is_personal,
            is_current: current.as_deref() == Some(m.workspace_id.as_str()),
        })
        .collect();
    Ok(WorkspaceList { workspaces })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateWorkspace {
    /// The workspace's display name.
    pub name: Text<1, 100>,
    /// Its slug: 2–40 lower-case letters, digits and dashes. Made from the name when left out.
    pub slug: Option<String>,
}

/// POST /v1/workspaces
pub async fn create(cx: &Cx<'_>, p: CreateWorkspace) -> Result<WorkspaceItem, ApiError> {
    let caller = cx.caller()?;
    if caller.locked_workspace_id.is_some() {
        return Err(ApiError::new(Code::UniverseMismatch, "a workspace-locked key cannot create workspaces"));
    }
    let slug = match p.slug {
        Some(s) => {
            slug::validate("slug", &s)?;
            s
        }
        None => slug::slugify(&p.name),
    };
    let workspace_id = ids::new_id("ws");
    match store::workspaces::create(cx.db(), &workspace_id, &slug, &p.name, &caller.account_id, cx.now_ms).await {
        Ok(()) => {
            Ok(WorkspaceItem { slug, name: p.name.into(), role: Role::Owner, is_personal: false, is_current: false })
        }
        Err(e) if e.is_unique_on("workspace.slug") => {
            Err(ApiError::new(Code::Conflict, format!("the slug `{slug}` is taken; choose another `slug`")))
        }
        Err(e) => Err(ApiError::cause(e)),
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DescribeWorkspace {
    /// A workspace slug from `list_workspaces`; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct WorkspaceDescription {
    pub workspace: WorkspaceItem,
    /// Your role here: `owner`, `admin` or `member`.
    pub role: Role,
    /// Whether your key may change things (`write`) or only read.
    pub key_scope: String,
    /// The workspace's agents, newest first (up to 50), by `@handle` when they have one.
    pub agents: Vec<DescribedAgent>,
    /// Company skills every session of the workspace gets.
    pub skills: Vec<DescribedSkill>,
    /// Routines and their triggers: `cron` in `timezone`, or by hand only.
    pub routines: Vec<RoutineTrigger>,
    /// Connected deploy and server targets, with the CLI agents run under a grant.
    pub connectors: Vec<DescribedConnector>,
    /// Access policies in force: per target or workspace-wide, per scope.
    pub policies: Vec<DescribedPolicy>,
    pub budget: Budget,
    /// What you can do here, by group, each with a one-line example.
    pub route_groups: Vec<RouteGroup>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct DescribedAgent {
    #[serde(flatten)]
    pub agent: store::agents::AgentSummary,
    /// One call to start from.
    pub usage: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct DescribedSkill {
    pub name: String,
    pub description: String,
    /// One call to start from.
    pub usage: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct DescribedConnector {
    pub connector_id: String,
    pub name: String,
    /// `vercel`, `aws`, `gcp`, `supabase`, `github` or `ssh`.
    pub provider: String,
    pub env: String,
    /// Whether credentials are connected.
    pub connected: bool,
    /// The tools agents use on it: the session server's access tools and the provider's CLI.
    pub tools: Vec<String>,
    /// How an agent asks for access to it.
    pub usage: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct DescribedPolicy {
    /// The target's name; `*` for every target of the workspace.
    pub target: String,
    pub scope: String,
    /// `ask`, `allow` or `deny`.
    pub decision: String,
    /// How to change it.
    pub usage: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RoutineTrigger {
    pub routine_id: String,
    pub name: String,
    /// `cron <expr> <timezone>` or `manual`.
    pub trigger: String,
    pub next_fire_ms: Option<i64>,
    /// One call to start from.
    pub usage: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Budget {
    /// What the wallet holds, in cents.
    pub remaining_cents: i64,
    pub card_saved: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RouteGroup {
    pub group: String,
    /// The tools (MCP) in this group you may call with this key.
    pub tools: Vec<String>,
    /// The REST routes of this group.
    pub routes: Vec<String>,
    /// One call to start from.
    pub example: String,
}

/// A usage line for an operation of the table, with an item's own arguments filled in.
fn usage(name: &str, slug: &str, args: serde_json::Value) -> String {
    let op = crate::ops::find(name).expect("describe_workspace names operations of the table");
    crate::ops::help::usage_with(op, Some(slug), args.as_object().cloned().unwrap_or_default())
}

/// describe_workspace: read live from the workspace and the operation table.
pub async fn describe(cx: &Cx<'_>, p: DescribeWorkspace) -> Result<WorkspaceDescription, ApiError> {
    let caller = cx.caller()?;
    let m = cx.workspace(p.workspace.as_deref())?;
    let (db, ws) = (cx.db(), m.workspace_id.as_str());
    let (overview, skills, routines, connectors, policies) = futures::try_join!(
        store::workspaces::overview(db, ws, 50),
        store::skills::list(db, ws),
        store::routines::list(db, ws),
        store::connectors::list(db, ws),
        store::connectors::all_policies(db, ws),
    )?;
    let (overview, agents) = overview.ok_or_else(|| ApiError::not_found("workspace"))?;
    let slug = m.slug.as_str();
    let agents = agents
        .into_iter()
        .map(|a| {
            let by = a.handle.clone().unwrap_or_else(|| a.id.clone());
            let usage = usage("start_session", slug, json!({"agent_id": by, "message": "<the task>"}));
            DescribedAgent { agent: a, usage }
        })
        .collect();
    let skills = skills
        .into_iter()
        .map(|s| DescribedSkill {
            usage: usage("get_skill", slug, json!({"name": s.name})),
            name: s.name,
            description: s.description,
        })
        .collect();
    let routines = routines
        .into_iter()
        .map(|r| crate::ops::routines::shown(r, cx.now_ms))
        .map(|r| RoutineTrigger {
            trigger: r.cron.as_ref().map_or_else(|| "manual".to_owned(), |c| format!("cron {c} {}", r.timezone)),
            usage: usage("run_routine", slug, json!({"routine_id": r.routine_id})),
            routine_id: r.routine_id,
            name: r.name,
            next_fire_ms: r.next_fire_ms,
        })
        .collect();
    let policies = policies
        .into_iter()
        .map(|p| DescribedPolicy {
            target: connectors
                .iter()
                .find(|c| c.connector_id == p.connector_id)
                .map_or_else(|| "*".to_owned(), |c| c.name.clone()),
            usage: usage(
                "set_policy",
                slug,
                json!({"connector_id": Some(&p.connector_id).filter(|c| !c.is_empty()), "scope": p.scope}),
            ),
            scope: p.scope,
            decision: p.decision,
        })
        .collect();
    let connectors = connectors
        .into_iter()
        .map(|c| {
            let cli = help_guides::provider(&c.provider).map_or(c.provider.as_str(), |g| g.cli);
            let command = help_guides::provider(&c.provider).map_or("", |g| g.command);
            DescribedConnector {
                tools: ["request_access", "check_grant", "get_credential", cli].map(str::to_owned).to_vec(),
                usage: help_guides::request_access(&c.name, "deploy", command),
                connector_id: c.connector_id,
                name: c.name,
                provider: c.provider,
                env: c.env,
                connected: c.connected,
            }
        })
        .collect();
    let mut groups: Vec<RouteGroup> = Vec::new();
    for op in OPS.iter().filter(|op| op.scope != Scope::Public) {
        let allowed = op.scope == Scope::Read || caller.can_write;
        let group = match groups.iter_mut().find(|g| g.group == op.group.name()) {
            Some(g) => g,
            None => {
                groups.push(RouteGroup {
                    group: op.group.name().to_owned(),
                    tools: vec![],
                    routes: vec![],
                    example: crate::ops::help::usage(op, Some(&m.slug)),
                });
                groups.last_mut().expect("just pushed")
            }
        };
        match op.mcp_tool() {
            Some(tool) if allowed && !group.tools.iter().any(|t| t == tool) => group.tools.push(tool.to_owned()),
            _ => {}
        }
        group.routes.push(format!("{} {}", op.method, op.path));
    }
    Ok(WorkspaceDescription {
        workspace: WorkspaceItem {
            slug: m.slug.clone(),
            name: m.name.clone(),
            role: m.role,
            is_personal: m.is_personal,
            is_current: true,
        },
        role: m.role,
        key_scope: if caller.can_write { "write" } else { "read" }.to_owned(),
        agents,
        skills,
        routines,
        connectors,
        policies,
        budget: Budget { remaining_cents: overview.balance_cents, card_saved: overview.card_saved },
        route_groups: groups,
    })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteWorkspace {
    /// The slug of the workspace to delete.
    pub workspace: String,
    /// The slug again, to confirm.
    pub confirm: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct WorkspaceDeleted {
    pub workspace: String,
    pub deleted: bool,
    /// Sessions that were running or idle and were stopped.
    pub sessions_stopped: i64,
    /// Credit moved to your personal workspace, in cents.
    pub credit_moved_cents: i64,
}

/// delete_workspace: permanently, after stopping its sessions and moving its credit home.
pub async fn delete(cx: &Cx<'_>, p: DeleteWorkspace) -> Result<WorkspaceDeleted, ApiError> {
    let caller = cx.caller()?;
    if caller.locked_workspace_id.is_some() {
        return Err(ApiError::new(
            Code::Forbidden,
            "a workspace-locked key cannot delete workspaces; use your own key",
        ));
    }
    let m = cx.workspace(Some(&p.workspace))?.clone();
    if p.confirm != m.slug {
        return Err(ApiError::invalid(format!("`confirm` must repeat the slug `{}`", m.slug)));
    }
    if m.is_personal {
        return Err(ApiError::new(Code::Forbidden, "your personal workspace cannot be deleted"));
    }
    cx.require_role(&m, Role::Owner)?;
    let db = cx.db();
    let live = store::sessions::live_in_workspace(db, &m.workspace_id).await?;
    for session_id in &live {
        crate::ops::sessions::call(cx, session_id, crate::session::calls::Stop {}).await.ok();
        crate::ops::requests::close_session(cx, session_id).await?;
    }
    // Every session object forgets its transcript; the rows go with the workspace below.
    let all = store::sessions::all_in_workspace(db, &m.workspace_id).await?;
    for session_id in &all {
        cx.env.sessions.ask(session_id, crate::session::calls::Purge {}).await.ok();
    }
    let moved = store::workspaces::delete(db, &m.workspace_id, &caller.account_id, cx.now_ms).await?;
    Ok(WorkspaceDeleted {
        workspace: m.slug,
        deleted: true,
        sessions_stopped: live.len() as i64,
        credit_moved_cents: moved,
    })
}
