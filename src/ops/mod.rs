//! The operation table: each operation declared once, with its name, doc, scope, parameter and result
//! types, annotations and REST route. MCP `tools/list` and `tools/call`, the REST router, `openapi.json`
//! and the `help` tool all read [`OPS`]; none keeps a list of its own. Rust callers (the console, MCP
//! resources, completions and tasks) call its rows through [`call`], typed, so a renamed operation,
//! argument or answer field fails to compile.

pub mod accounts;
pub mod agents;
pub mod apps;
pub mod audit;
pub mod billing;
pub mod catalog;
pub mod commands;
pub mod completions;
pub mod connected_apps;
pub mod connectors;
pub mod context;
pub mod device;
pub mod files;
pub mod goals;
pub mod grants;
pub mod handoffs;
pub mod help;
pub mod help_center;
pub mod help_guides;
pub mod mcp_tasks;
pub mod members;
pub mod memory;
pub mod metrics;
pub mod prompts;
pub mod push;
pub mod records;
pub mod remotes;
pub mod requests;
pub mod resource_watch;
pub mod resources;
pub mod routines;
pub mod runners;
pub mod secrets;
pub mod session_tokens;
pub mod sessions;
pub mod sharing;
pub mod skills;
pub mod slack;
pub mod tasks;
pub mod traces;
pub mod transcript;
pub mod usage;
pub mod webhooks;
pub mod workspaces;

use crate::cx::Cx;
pub use crate::domain::rate::{decided as rate_decided, rate_limit};
use crate::error::{ApiError, Code};
pub use crate::rules::schema::Published;
#[cfg(not(target_arch = "wasm32"))]
pub use crate::rules::schema::{input_schema, output_schema};
use crate::store;
use futures::future::LocalBoxFuture;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};
use std::future::Future;
use std::sync::OnceLock;

/// What a caller's key must allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// No key (account sign-up, guarded by configuration).
    Public,
    Read,
    Write,
    /// The deployment's admin token (adding credit).
    Admin,
}

impl Scope {
    pub const fn as_str(self) -> &'static str {
        match self {
            Scope::Public => "public",
            Scope::Read => "read",
            Scope::Write => "write",
            Scope::Admin => "admin",
        }
    }
}

/// Declares the groups once: each is a help topic and an OpenAPI tag, and its doc is the topic's summary.
macro_rules! groups {
    ($($(#[doc = $doc:literal])* $variant:ident = $name:literal;)*) => {
        /// The help topic and REST tag an operation belongs to.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Group {
            $($(#[doc = $doc])* $variant,)*
        }

        impl Group {
            pub const fn name(self) -> &'static str {
                match self { $(Self::$variant => $name,)* }
            }

            /// Its one-line summary in `help`.
            pub fn summary(self) -> String {
                let docs: &[&str] = match self { $(Self::$variant => &[$($doc),*],)* };
                docs.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ")
            }
        }
    };
}

groups! {
    /// Accounts and API keys: sign up, mint keys with read or write scope, lock a key to a workspace, revoke.
    Keys = "keys";
    /// Where everything lives: list and create workspaces, members and roles, and what a workspace holds.
    Workspaces = "workspaces";
    /// This help, generated from the server's own operation table.
    Help = "help";
    /// The agents you can start: their harness, model, instructions and catalog entry.
    Agents = "agents";
    /// Start a session with an agent, send messages, read replies by cursor (waiting up to 50 s), hand off,
    /// share, stop.
    Sessions = "sessions";
    /// A task is the shared folder several sessions work in: its files, artifacts, threads, budget and open
    /// requests.
    Tasks = "tasks";
    /// A session's standing goal: it keeps working on its own until the goal is met or a limit stops it.
    Goals = "goals";
    /// Agents on a schedule: a cron in a time zone, or by hand; each fire starts a session or sends a
    /// message.
    Routines = "routines";
    /// The wallet, what sessions spent, and credit.
    Usage = "usage";
    /// Company skills: SKILL.md documents (Agent Skills layout) every session of the workspace gets.
    Skills = "skills";
    /// Workspace secrets (model keys, MCP tokens): sealed at rest, never shown again.
    Secrets = "secrets";
    /// Deploy and server targets agents ask access to, the policies that decide it, and the audit log;
    /// `connectors/<kind>` (vercel, aws, gcp, supabase, github, ssh) says how to connect each.
    Connectors = "connectors";
    /// Search saved memory, past conversations and uploaded traces; read a hit in full.
    Context = "context";
    /// Human decisions and observed outcomes about sessions' results, and how each harness and model
    /// performs.
    Records = "records";
    /// Send the workspace's events to your HTTPS endpoints, signed; see deliveries, rotate secrets, test.
    Webhooks = "webhooks";
    /// Machines running `sky runner` for the workspace's runner agents.
    Runners = "runners";
    /// How the workspace is doing: calls, errors, latency, turns, spend and open requests over time, and
    /// where its turns' traces (OpenTelemetry) go.
    Observability = "observability";
}

/// MCP tool annotations, set truthfully: clients decide what to confirm from them.
#[derive(Debug, Clone, Copy)]
pub struct Hints {
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
}

pub const READ_ONLY: Hints = Hints { read_only: true, destructive: false, idempotent: true };
/// Creates something new each call (unless an idempotency key says otherwise).
pub const CREATES: Hints = Hints { read_only: false, destructive: false, idempotent: false };
/// Sets state to what the call says; repeating it changes nothing more.
pub const UPDATES: Hints = Hints { read_only: false, destructive: false, idempotent: true };
/// Removes or overwrites something for good.
pub const DESTROYS: Hints = Hints { read_only: false, destructive: true, idempotent: true };

/// How an MCP client reaches an operation on `/v1/mcp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    /// A tool of its own in `tools/list`.
    Own,
    /// Through the one [`MANAGE`] tool, by name: settings and what is done seldom (keys, members, runners,
    /// targets, webhooks, billing, skills, memory), so every model is not made to read their schemas before
    /// it does anything. The contract's tools and the two a new account needs at once stay their own.
    Grouped,
    /// Not from an MCP client: it needs no key (sign-up, device sign-in), the deployment's admin token, or a
    /// browser (the console's one-time sign-in link).
    RestOnly,
}

/// The tool that runs every [`Tool::Grouped`] operation by name.
pub const MANAGE: &str = "manage";

/// The row a tool call runs and its arguments: the tool's own, or the one `manage` names. `None` for a
/// name that is no tool; an error for a `manage` call that names no grouped operation.
pub fn tool_call(name: &str, arguments: Value) -> Option<Result<(&'static Op, Value), ApiError>> {
    if name != MANAGE {
        // A grouped operation called by its own name runs too: clients that learned it before it moved
        // under `manage` keep working; only the list a model reads is shorter.
        return find(name).filter(|op| op.tool != Tool::RestOnly).map(|op| Ok((op, arguments)));
    }
    let Value::Object(mut call) = arguments else {
        return Some(Err(ApiError::new(Code::InvalidParams, "the arguments must be an object")));
    };
    let arguments = match call.remove("arguments") {
        None | Some(Value::Null) => Value::Object(serde_json::Map::new()),
        Some(args @ Value::Object(_)) => args,
        Some(_) => return Some(Err(ApiError::new(Code::InvalidParams, "`arguments` must be an object"))),
    };
    let named = call.get("operation").and_then(Value::as_str).unwrap_or_default();
    Some(match find(named) {
        Some(op) if op.tool == Tool::Grouped => Ok((op, arguments)),
        Some(op) if op.tool == Tool::Own => Err(ApiError::new(
            Code::InvalidParams,
            format!("`operation`: `{named}` is a tool of its own; call `{}` directly", op.name),
        )),
        _ => {
            let names: Vec<&str> = OPS.iter().filter(|op| op.tool == Tool::Grouped).map(|op| op.name).collect();
            let what = match named {
                "" => "`operation` is required: it is".to_owned(),
                _ => format!("`operation`: {} is not", crate::rules::params::quoted(named)),
            };
            Err(ApiError::new(Code::InvalidParams, format!("{what} one of {}", names.join(", "))))
        }
    })
}

pub type OpFn = for<'a> fn(&'a Cx<'a>, Value) -> LocalBoxFuture<'a, Result<Value, ApiError>>;

/// One row of the table.
pub struct Op {
    pub name: &'static str,
    pub title: &'static str,
    /// The `///` lines of the row: tool description, OpenAPI summary and help line.
    pub docs: &'static [&'static str],
    /// The help topic and REST tag it belongs to.
    pub group: Group,
    pub scope: Scope,
    /// How an MCP client on `/v1/mcp` reaches it.
    pub tool: Tool,
    pub method: &'static str,
    pub path: &'static str,
    /// What REST answers on success: 201 when a new resource with its own id comes into being.
    pub status: u16,
    pub hints: Hints,
    pub params: Published,
    pub result: Published,
    pub run: OpFn,
    /// May run as an MCP task (it starts a turn whose end the task follows): `execution.taskSupport`
    /// `optional` in `tools/list`. Which result follows which turn is `crate::ops::mcp_tasks`'s.
    pub task: bool,
    /// Mints a credential (a key, a runner or session token, a sign-in link) or changes who belongs to a
    /// workspace: refused to an app's OAuth token ([`not_an_app`]), whose
    /// disconnection must end everything it could do.
    pub credentials: bool,
}

impl Op {
    /// Its parameters' JSON Schema, derived once per isolate: the table is static, so its schemas are too.
    pub fn params_schema(&self) -> &'static Value {
        &self.schemas().0
    }

    /// Its result's JSON Schema, derived once per isolate.
    pub fn result_schema(&self) -> &'static Value {
        &self.schemas().1
    }

    /// The key its `part` (`params` or `result`) is published under in `src/schemas.json`.
    pub fn schema_key(&self, part: &str) -> String {
        format!("op:{}:{part}", self.name)
    }

    fn schemas(&self) -> &'static (Value, Value) {
        static ALL: OnceLock<Vec<(Value, Value)>> = OnceLock::new();
        let all = ALL.get_or_init(|| {
            OPS.iter()
                .map(|op| (op.params.get(&op.schema_key("params")), op.result.get(&op.schema_key("result"))))
                .collect()
        });
        let i = OPS.iter().position(|op| op.name == self.name).expect("every Op is a row of OPS");
        &all[i]
    }

    pub fn description(&self) -> String {
        self.docs.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ")
    }

    /// Its `tools/list` entry.
    pub fn tool_entry(&self) -> Value {
        let mut entry = json!({
            "name": self.name,
            "title": self.title,
            "description": self.description(),
            "inputSchema": crate::mcp::results::for_models(self.params_schema().clone()),
            "outputSchema": crate::mcp::results::for_validators(self.result_schema().clone()),
            "annotations": {
                "title": self.title,
                "readOnlyHint": self.hints.read_only,
                "destructiveHint": self.hints.destructive,
                "idempotentHint": self.hints.idempotent,
                "openWorldHint": false,
            },
        });
        if self.task {
            entry["execution"] = json!({"taskSupport": "optional"});
        }
        // The MCP App that shows its results, for clients that render them.
        if let Some(meta) = apps::tool_meta(self.name) {
            entry["_meta"] = meta;
        }
        entry
    }

    /// The MCP tool that runs it: its own name, [`MANAGE`], or none.
    pub fn mcp_tool(&self) -> Option<&'static str> {
        match self.tool {
            Tool::Own => Some(self.name),
            Tool::Grouped => Some(MANAGE),
            Tool::RestOnly => None,
        }
    }

    /// What REST answers on success: the row's `http` status, 200 unless it says 201.
    pub fn http_status(&self) -> u16 {
        self.status
    }
}

/// Declares the table. Each row: docs, `name(Params) -> Result { title, group, scope, tool, http, hints, run }`;
/// `tool` is how an MCP client reaches it (`Own`, `Grouped` or `RestOnly`: [`Tool`]).
/// `http` is the method and path, then `201` when the operation creates a resource with its own id; a row
/// that starts a turn may end with `task: true` (it may run as an MCP task); one that mints a credential or
/// changes members says `credentials: true` before it.
macro_rules! operations {
    (@status) => { 200 };
    (@status $status:literal) => { $status };
    ($(
        $(#[doc = $doc:literal])*
        $name:ident($params:ty) -> $result:ty {
            title: $title:literal, group: $group:ident, scope: $scope:ident, tool: $tool:ident,
            http: $method:ident $path:literal $($status:literal)?, hints: $hints:ident, run: $run:path
            $(, credentials: $credentials:literal)? $(, task: $task:literal)? $(,)?
        }
    )*) => {
        pub static OPS: &[Op] = &[$(
            Op {
                name: stringify!($name),
                title: $title,
                docs: &[$($doc),*],
                group: Group::$group,
                scope: Scope::$scope,
                tool: Tool::$tool,
                method: stringify!($method),
                path: $path,
                status: operations!(@status $($status)?),
                hints: $hints,
                params: Published::input::<$params>(),
                result: Published::output::<$result>(),
                run: |cx, args| Box::pin(async move {
                    let params: $params = decode_params(args)?;
                    let result: $result = $run(cx, params).await?;
                    encode(&result)
                }),
                task: false $(|| $task)?,
                credentials: false $(|| $credentials)?,
            },
        )*];

        /// Each row as a typed call for Rust callers (the console, MCP resources and tasks): the row's name,
        /// its arguments' fields and its answer's fields are the compiler's to check, and the call runs
        /// the same checks as [`invoke`] (scope, app refusal, rate limit, feed bump), with the handler's
        /// value returned before it becomes JSON.
        pub mod call {
            use super::*;
            $(
                $(#[doc = $doc])*
                pub async fn $name(cx: &Cx<'_>, params: $params) -> Result<$result, ApiError> {
                    let op = find(stringify!($name)).expect("every typed call is a row of OPS");
                    // Started only once the checks let it: nothing of the handler runs before them.
                    invoke_with(cx, op, async move { $run(cx, params).await }).await
                }
            )*
        }

        /// Each row called with JSON arguments (a console form's), exactly as [`invoke`] calls it (the
        /// arguments decoded after the checks), answering the handler's own value.
        pub mod call_json {
            use super::*;
            $(
                pub async fn $name(cx: &Cx<'_>, args: Value) -> Result<$result, ApiError> {
                    let op = find(stringify!($name)).expect("every typed call is a row of OPS");
                    invoke_with(cx, op, async move {
                        let params: $params = decode_params(args)?;
                        $run(cx, params).await
                    })
                    .await
                }
            )*
        }

        /// Each row's name, as a constant: a `match` on an operation's name names rows the compiler knows.
        #[allow(non_upper_case_globals)]
        pub mod name {
            $(pub const $name: &str = stringify!($name);)*
        }
    };
}

operations! {
    /// Create an account: a person or program, its personal workspace (slug from the name) and a first
    /// API key with `read` and `write` scopes, returned once. Open under local development; in production
    /// it needs the admin token as the bearer.
    create_account(accounts::CreateAccount) -> accounts::AccountCreated {
        title: "Create an account", group: Keys, scope: Public, tool: RestOnly,
        http: POST "/v1/accounts" 201, hints: CREATES, run: accounts::create
    }

    /// Create an API key for your account: `scopes` `["read"]` or `["read", "write"]`, optionally locked to
    /// one `workspace`. The key is returned once; only its hash is kept.
    create_key(accounts::CreateKey) -> accounts::KeyCreated {
        title: "Create an API key", group: Keys, scope: Write, tool: Grouped,
        http: POST "/v1/keys" 201, hints: CREATES, run: accounts::create_key, credentials: true
    }

    /// Your API keys: prefix, scopes, workspace lock, last use and whether revoked. Never the secret.
    list_keys(accounts::ListKeys) -> accounts::KeyList {
        title: "List API keys", group: Keys, scope: Read, tool: Grouped,
        http: GET "/v1/keys", hints: READ_ONLY, run: accounts::list_keys
    }

    /// Revoke one of your API keys; it is refused from the next call on.
    revoke_key(accounts::RevokeKey) -> accounts::KeyRevoked {
        title: "Revoke an API key", group: Keys, scope: Write, tool: Grouped,
        http: DELETE "/v1/keys/{key_id}", hints: DESTROYS, run: accounts::revoke_key, credentials: true
    }

    /// The apps you connected through OAuth sign-in (an MCP client's `/mcp` login): the workspace and
    /// scopes each may use, and when it was last used.
    list_connected_apps(connected_apps::ListConnectedApps) -> connected_apps::ConnectedApps {
        title: "List connected apps", group: Keys, scope: Read, tool: Grouped,
        http: GET "/v1/connected-apps", hints: READ_ONLY, run: connected_apps::list
    }

    /// Disconnect an app you connected through OAuth sign-in; every token it holds is refused from the
    /// next call on.
    disconnect_app(connected_apps::DisconnectApp) -> connected_apps::AppDisconnected {
        title: "Disconnect an app", group: Keys, scope: Write, tool: Grouped,
        http: DELETE "/v1/connected-apps/{grant_id}", hints: DESTROYS, run: connected_apps::disconnect, credentials: true
    }

    /// A one-time link that signs a browser in to the console as this key (its scopes and workspace lock),
    /// usable once within a minute: what `sky console` opens.
    open_console(accounts::OpenConsole) -> accounts::ConsoleLink {
        title: "Open the console", group: Keys, scope: Read, tool: RestOnly,
        http: POST "/v1/console/link" 201, hints: CREATES, run: accounts::open_console, credentials: true
    }

    /// All workspaces you belong to: slug, name, role, is_personal, is_current. Pass a slug as `workspace`
    /// to any list or create tool.
    list_workspaces(workspaces::ListWorkspaces) -> workspaces::WorkspaceList {
        title: "List workspaces", group: Workspaces, scope: Read, tool: Own,
        http: GET "/v1/workspaces", hints: READ_ONLY, run: workspaces::list
    }

    /// Create a shared workspace; you become its owner. Not with a workspace-locked key.
    create_workspace(workspaces::CreateWorkspace) -> workspaces::WorkspaceItem {
        title: "Create a workspace", group: Workspaces, scope: Write, tool: Grouped,
        http: POST "/v1/workspaces" 201, hints: CREATES, run: workspaces::create
    }

    /// The members of a workspace and their roles (owner, admin, member).
    list_members(members::ListMembers) -> members::MemberList {
        title: "List members", group: Workspaces, scope: Read, tool: Grouped,
        http: GET "/v1/workspaces/{workspace}/members", hints: READ_ONLY, run: members::list
    }

    /// Invite someone to a workspace as `member` or `admin`, for 1–30 days (default 7): returns a one-time
    /// `token`, shown once, to pass on; the invitee accepts it signed in with their own key. `email` is only
    /// a note. Owners and admins. (People join only this way: sign-up never proves an email.)
    create_invitation(members::CreateInvitation) -> members::InvitationCreated {
        title: "Invite someone", group: Workspaces, scope: Write, tool: Grouped,
        http: POST "/v1/workspaces/{workspace}/invitations" 201, hints: CREATES, run: members::invite, credentials: true
    }

    /// A workspace's invitations that can still be accepted (never their tokens). Owners and admins.
    list_invitations(members::ListInvitations) -> members::InvitationList {
        title: "List invitations", group: Workspaces, scope: Read, tool: Grouped,
        http: GET "/v1/workspaces/{workspace}/invitations", hints: READ_ONLY, run: members::list_invitations
    }

    /// Revoke a pending invitation: its token is refused from then on. Owners and admins.
    revoke_invitation(members::RevokeInvitation) -> members::InvitationRevoked {
        title: "Revoke an invitation", group: Workspaces, scope: Write, tool: Grouped,
        http: DELETE "/v1/workspaces/{workspace}/invitations/{invitation_id}", hints: DESTROYS,
        run: members::revoke_invitation, credentials: true
    }

    /// Accept an invitation with its `token`: you join its workspace with its role. Once per invitation,
    /// before it expires; with your own key, not a workspace-locked one.
    accept_invitation(members::AcceptInvitation) -> workspaces::WorkspaceItem {
        title: "Accept an invitation", group: Workspaces, scope: Write, tool: Grouped,
        http: POST "/v1/invitations/accept" 201, hints: CREATES, run: members::accept, credentials: true
    }

    /// Change a member's `role` (`member`, `admin`, `owner`). Owners and admins; only an owner changes an
    /// owner or makes one, and the last owner stays.
    set_member_role(members::SetMemberRole) -> store::members::Member {
        title: "Change a member's role", group: Workspaces, scope: Write, tool: Grouped,
        http: PATCH "/v1/workspaces/{workspace}/members/{account_id}", hints: UPDATES, run: members::set_role, credentials: true
    }

    /// Remove a member from a workspace, or leave it (your own `account_id`). Owners and admins remove
    /// others; only an owner removes an owner, and the last owner stays.
    remove_member(members::RemoveMember) -> members::MemberRemoved {
        title: "Remove a member", group: Workspaces, scope: Write, tool: Grouped,
        http: DELETE "/v1/workspaces/{workspace}/members/{account_id}", hints: DESTROYS, run: members::remove, credentials: true
    }

    /// What the workspace has and what you may do there, live: agents, skills, routines, connectors and their
    /// tools, policies, budget, your role, each with a usage example. Optional `workspace`.
    describe_workspace(workspaces::DescribeWorkspace) -> workspaces::WorkspaceDescription {
        title: "Describe a workspace", group: Workspaces, scope: Read, tool: Own,
        http: GET "/v1/workspace", hints: READ_ONLY, run: workspaces::describe
    }

    /// Help from the server's own API document: without `topic`, the topics; with one, its operations,
    /// required fields, a skeleton body and a usage line.
    help(help::Help) -> help::HelpAnswer {
        title: "Help", group: Help, scope: Read, tool: Own,
        http: GET "/v1/help", hints: READ_ONLY, run: help::help
    }

    /// Your agents in the workspace: id, name, `@handle`, harness, model, session count. Optional `workspace`.
    list_agents(agents::ListAgents) -> agents::AgentList {
        title: "List agents", group: Agents, scope: Read, tool: Own,
        http: GET "/v1/agents", hints: READ_ONLY, run: agents::list
    }

    /// Create an agent: a `harness`, a `model`, instructions, remote MCP servers it may call, and its catalog
    /// entry (`handle`, `description`, `categories`). Optional `workspace`.
    create_agent(agents::CreateAgent) -> agents::Agent {
        title: "Create an agent", group: Agents, scope: Write, tool: Own,
        http: POST "/v1/agents" 201, hints: CREATES, run: agents::create
    }

    /// One agent, in full, by id or `@handle`.
    get_agent(agents::GetAgent) -> agents::Agent {
        title: "Get an agent", group: Agents, scope: Read, tool: Grouped,
        http: GET "/v1/agents/{agent_id}", hints: READ_ONLY, run: agents::get
    }

    /// Change an agent's fields (by id or `@handle`); fields left out keep their value.
    update_agent(agents::UpdateAgent) -> agents::Agent {
        title: "Update an agent", group: Agents, scope: Write, tool: Grouped,
        http: PATCH "/v1/agents/{agent_id}", hints: UPDATES, run: agents::update
    }

    /// Sessions, newest first; `agent_id` (an id or `@handle`) narrows to one agent. Optional `workspace`.
    list_sessions(sessions::ListSessions) -> sessions::SessionList {
        title: "List sessions", group: Sessions, scope: Read, tool: Own,
        http: GET "/v1/sessions", hints: READ_ONLY, run: sessions::list
    }

    /// One session and its status: `provisioning`, `idle`, `running` or `terminated`.
    get_session(sessions::GetSession) -> sessions::SessionInfo {
        title: "Get a session", group: Sessions, scope: Read, tool: Own,
        http: GET "/v1/sessions/{session_id}", hints: READ_ONLY, run: sessions::get
    }

    /// Start a session with an agent (an id or catalog `@handle`), the task as its first message; needs an
    /// `idempotency_key`; returns the session, `message_id` and the cursor after it. `task_id` joins a task
    /// (then omit `workspace`); `budget_cents` caps its spend; `model` overrides the agent's. Optional
    /// `workspace`.
    start_session(sessions::StartSession) -> sessions::Started {
        title: "Start a session", group: Sessions, scope: Write, tool: Own,
        http: POST "/v1/sessions" 201, hints: CREATES, run: sessions::start, task: true
    }

    /// Send the next message into an idle session; requires an `idempotency_key`.
    send_message(sessions::SendMessage) -> sessions::Sent {
        title: "Send a message", group: Sessions, scope: Write, tool: Own,
        http: POST "/v1/sessions/{session_id}/messages" 201, hints: CREATES, run: sessions::send, task: true
    }

    /// That message's replies after the cursor, one page at a time; with `wait_seconds` (up to 50) waits
    /// until the turn's idle mark.
    read_session(sessions::ReadSession) -> sessions::SessionPage {
        title: "Read a session", group: Sessions, scope: Read, tool: Own,
        http: GET "/v1/sessions/{session_id}/events", hints: READ_ONLY, run: sessions::read
    }

    /// What a session produced: its last reply, the task files it wrote, and the `task_id` they live in.
    collect_result(sessions::CollectResult) -> sessions::CollectedResult {
        title: "Collect a result", group: Sessions, scope: Read, tool: Own,
        http: GET "/v1/sessions/{session_id}/result", hints: READ_ONLY, run: sessions::collect
    }

    /// Change a session's `model`, `thinking` level or both; its next turn uses them and the conversation and
    /// files stay.
    switch_model(sessions::SwitchModel) -> sessions::ModelSwitched {
        title: "Switch model", group: Sessions, scope: Write, tool: Own,
        http: POST "/v1/sessions/{session_id}/model", hints: UPDATES, run: sessions::switch_model
    }

    /// Archive a session you are done with; its transcript, files and artifacts stay.
    stop_session(sessions::StopSession) -> sessions::Stopped {
        title: "Stop a session", group: Sessions, scope: Write, tool: Own,
        http: POST "/v1/sessions/{session_id}/stop", hints: DESTROYS, run: sessions::stop
    }

    /// Cancel the running turn of a session (or, with `message_id`, that message's turn): it ends
    /// `cancelled`, what it spent stays charged, its open requests are withdrawn, a runner ends the agent's
    /// command, and the session is idle again for the next message. Refused when no turn runs.
    cancel_turn(sessions::CancelTurn) -> sessions::TurnCancelled {
        title: "Cancel a turn", group: Sessions, scope: Write, tool: Grouped,
        http: POST "/v1/sessions/{session_id}/cancel-turn", hints: UPDATES, run: sessions::cancel_turn
    }

    /// Continue a session with another agent (`agent_id`), optionally on another `model` and `thinking`
    /// level: a new session starts with the conversation and files; the original stays. Needs an
    /// `idempotency_key`; returns the handoff.
    hand_off_session(handoffs::HandOffSession) -> handoffs::Handoff {
        title: "Hand off a session", group: Sessions, scope: Write, tool: Own,
        http: POST "/v1/sessions/{session_id}/handoff" 201, hints: CREATES, run: handoffs::hand_off, task: true
    }

    /// Where a handoff stands; once `completed`, `target_session` is the session to continue with.
    get_handoff(handoffs::GetHandoff) -> handoffs::HandoffStatus {
        title: "Get a handoff", group: Sessions, scope: Read, tool: Own,
        http: GET "/v1/handoffs/{handoff_id}", hints: READ_ONLY, run: handoffs::get
    }

    /// Turn a session's share link on (`view_only` for a read-only link) or off; returns `share_url`.
    share_session(sharing::ShareSession) -> sharing::SessionShared {
        title: "Share a session", group: Sessions, scope: Write, tool: Own,
        http: POST "/v1/sessions/{session_id}/share", hints: UPDATES, run: sharing::share_session
    }

    /// The threads of a session's task: root first, then helpers, handoffs and children, each with its agent,
    /// model, status and spend.
    read_session_threads(tasks::ReadSessionThreads) -> tasks::Threads {
        title: "Read session threads", group: Tasks, scope: Read, tool: Own,
        http: GET "/v1/sessions/{session_id}/threads", hints: READ_ONLY, run: tasks::threads
    }

    /// Every agent you can start, by `@handle`, with what it does, its categories, pricing and
    /// requirements. Optional `workspace`.
    search_catalog(catalog::SearchCatalog) -> catalog::CatalogResults {
        title: "Search the catalog", group: Agents, scope: Read, tool: Own,
        http: GET "/v1/catalog", hints: READ_ONLY, run: catalog::search
    }

    /// Your tasks and what each is waiting on. Optional `workspace`.
    list_tasks(tasks::ListTasks) -> tasks::TaskList {
        title: "List tasks", group: Tasks, scope: Read, tool: Own,
        http: GET "/v1/tasks", hints: READ_ONLY, run: tasks::list
    }

    /// One task's sessions, open requests and cost.
    get_task(tasks::GetTask) -> tasks::TaskDetail {
        title: "Get a task", group: Tasks, scope: Read, tool: Own,
        http: GET "/v1/tasks/{task_id}", hints: READ_ONLY, run: tasks::get
    }

    /// Where `land` pushes a task's landed work: a git repository (`https://`, or a path on the runner's
    /// machine), a branch, and the connector whose grant pushes. `url: null` removes it.
    set_task_remote(remotes::SetTaskRemote) -> remotes::TaskRemote {
        title: "Set a task's git remote", group: Tasks, scope: Write, tool: Grouped,
        http: PUT "/v1/tasks/{task_id}/remote", hints: UPDATES, run: remotes::set
    }

    /// A task's git remote and the commit agentsky last pushed there.
    get_task_remote(remotes::GetTaskRemote) -> remotes::TaskRemote {
        title: "Get a task's git remote", group: Tasks, scope: Read, tool: Grouped,
        http: GET "/v1/tasks/{task_id}/remote", hints: READ_ONLY, run: remotes::get
    }

    /// Cap what all of a task's sessions may spend together, in cents (`null` removes the cap).
    set_task_budget(tasks::SetTaskBudget) -> tasks::TaskBudget {
        title: "Set a task's budget", group: Tasks, scope: Write, tool: Grouped,
        http: PUT "/v1/tasks/{task_id}/budget", hints: UPDATES, run: tasks::set_budget
    }

    /// Published results from a task, and whether each has a public link. Optional `workspace` (or
    /// `task_id`).
    list_artifacts(sharing::ListArtifacts) -> sharing::ArtifactList {
        title: "List artifacts", group: Tasks, scope: Read, tool: Own,
        http: GET "/v1/artifacts", hints: READ_ONLY, run: sharing::list
    }

    /// Publish a task file as an artifact: a snapshot of its current (or a given) version.
    publish_artifact(sharing::PublishArtifact) -> store::artifacts::ArtifactRow {
        title: "Publish an artifact", group: Tasks, scope: Write, tool: Own,
        http: POST "/v1/tasks/{task_id}/artifacts" 201, hints: CREATES, run: sharing::publish
    }

    /// Turn an artifact's public link on (a new link each time) or off; returns `share_url`, which serves it
    /// to any browser without a key.
    share_artifact(sharing::ShareArtifact) -> sharing::ArtifactShared {
        title: "Share an artifact", group: Tasks, scope: Write, tool: Own,
        http: POST "/v1/artifacts/{artifact_id}/share", hints: UPDATES, run: sharing::share
    }

    /// Permanently delete a workspace you own and everything in it; `confirm` must repeat the slug.
    /// Sessions are stopped and the wallet's credit goes back to you. Not your default workspace; not
    /// with a workspace key.
    delete_workspace(workspaces::DeleteWorkspace) -> workspaces::WorkspaceDeleted {
        title: "Delete a workspace", group: Workspaces, scope: Write, tool: Own,
        http: DELETE "/v1/workspaces/{workspace}", hints: DESTROYS, run: workspaces::delete
    }

    /// A task's files: the latest version of each, by path, in its base (what has landed) or, with
    /// `session_id`, as that session sees them.
    list_task_files(files::ListTaskFiles) -> files::TaskFiles {
        title: "List task files", group: Tasks, scope: Read, tool: Own,
        http: GET "/v1/tasks/{task_id}/files", hints: READ_ONLY, run: files::list
    }

    /// Read one file of a task as text (up to 256 KiB), from its base or, with `session_id`, as that session
    /// sees it; `version` reads an older one.
    read_task_file(files::ReadTaskFile) -> files::TaskFile {
        title: "Read a task file", group: Tasks, scope: Read, tool: Own,
        http: GET "/v1/tasks/{task_id}/file", hints: READ_ONLY, run: files::read
    }

    /// Write a text file (up to 256 KiB) into a task's base as a new version; every session of the task sees
    /// it where its own lane has not changed it.
    write_task_file(files::WriteTaskFile) -> files::FileWritten {
        title: "Write a task file", group: Tasks, scope: Write, tool: Own,
        http: PUT "/v1/tasks/{task_id}/file", hints: UPDATES, run: files::write
    }

    /// A session's standing goal and its progress: iterations used, spend, minutes, the last verdict per
    /// criterion and why it stopped (met, limit reached, cleared).
    get_goal(goals::GetGoal) -> goals::GoalView {
        title: "Get a goal", group: Goals, scope: Read, tool: Own,
        http: GET "/v1/sessions/{session_id}/goal", hints: READ_ONLY, run: goals::get
    }

    /// Set a session's standing goal: an `objective` and optional `criteria` it keeps working toward on its
    /// own, checked after every turn, within `max_iterations`, `max_spend_cents` and `max_minutes`. Needs an
    /// `idempotency_key`.
    set_goal(goals::SetGoal) -> goals::GoalView {
        title: "Set a goal", group: Goals, scope: Write, tool: Own,
        http: PUT "/v1/sessions/{session_id}/goal", hints: UPDATES, run: goals::set
    }

    /// Clear a session's standing goal; it stops working on its own after the current turn. Needs an
    /// `idempotency_key`.
    clear_goal(goals::ClearGoal) -> goals::GoalView {
        title: "Clear a goal", group: Goals, scope: Write, tool: Own,
        http: DELETE "/v1/sessions/{session_id}/goal", hints: DESTROYS, run: goals::clear
    }

    /// Agents on a schedule, with their triggers and newest fires. Optional `workspace`.
    list_routines(routines::ListRoutines) -> routines::RoutineList {
        title: "List routines", group: Routines, scope: Read, tool: Own,
        http: GET "/v1/routines", hints: READ_ONLY, run: routines::list
    }

    /// Create a routine: each fire starts a session of `agent_id` or sends `message` into `session_id`, on a
    /// `cron` in `timezone` or only by `run_routine`; `budget_cents` caps each run. Optional `workspace`.
    create_routine(routines::CreateRoutine) -> routines::Routine {
        title: "Create a routine", group: Routines, scope: Write, tool: Own,
        http: POST "/v1/routines" 201, hints: CREATES, run: routines::create
    }

    /// Change a routine: its name, message, `cron`, `timezone`, `budget_cents`, or pause it (`enabled:
    /// false`) and resume it; fields left out keep their value.
    update_routine(routines::UpdateRoutine) -> routines::Routine {
        title: "Update a routine", group: Routines, scope: Write, tool: Grouped,
        http: PATCH "/v1/routines/{routine_id}", hints: UPDATES, run: routines::update
    }

    /// Pause a routine: its cron trigger skips it until it is resumed; `run_routine` still fires it.
    pause_routine(routines::RoutineRef) -> routines::Routine {
        title: "Pause a routine", group: Routines, scope: Write, tool: Grouped,
        http: POST "/v1/routines/{routine_id}/pause", hints: UPDATES, run: routines::pause
    }

    /// Resume a paused routine: it fires from its next trigger on, never for the times it missed.
    resume_routine(routines::RoutineRef) -> routines::Routine {
        title: "Resume a routine", group: Routines, scope: Write, tool: Grouped,
        http: POST "/v1/routines/{routine_id}/resume", hints: UPDATES, run: routines::resume
    }

    /// Delete a routine: it never fires again; the sessions it started stay.
    delete_routine(routines::RoutineRef) -> routines::RoutineDeleted {
        title: "Delete a routine", group: Routines, scope: Write, tool: Grouped,
        http: DELETE "/v1/routines/{routine_id}", hints: DESTROYS, run: routines::delete
    }

    /// Fire a routine now; needs an `idempotency_key` (a retry returns the same fire). A failed fire is
    /// recorded `failed` and answered as an error with its reason.
    run_routine(routines::RunRoutine) -> store::routines::FireRow {
        title: "Run a routine", group: Routines, scope: Write, tool: Own,
        http: POST "/v1/routines/{routine_id}/run" 201, hints: CREATES, run: routines::run, task: true
    }

    /// Your balance, whether a card is saved, and spend across sessions and API keys over UTC days
    /// `from`–`to` by `group_by`; with `session_id`, that session's totals and newest entries.
    get_usage(usage::GetUsage) -> usage::Usage {
        title: "Get usage", group: Usage, scope: Read, tool: Own,
        http: GET "/v1/usage", hints: READ_ONLY, run: usage::get
    }

    /// Calls, errors, latency percentiles, turns, spend and open requests of a workspace (or one agent
    /// with `agent_id`) over the last `window` (`hour`, `day`, `week`, `month`): totals, a series of
    /// points and, for the workspace, the numbers per agent. Optional `workspace`.
    get_metrics(metrics::GetMetrics) -> metrics::Metrics {
        title: "Get metrics", group: Observability, scope: Read, tool: Grouped,
        http: GET "/v1/metrics", hints: READ_ONLY, run: metrics::get
    }

    /// Export each turn as OpenTelemetry spans (turn, steps, model calls with tokens and cost, tool calls)
    /// to an OTLP/HTTP endpoint, with one optional header (sealed); `url: null` stops it. Outbound calls
    /// carry W3C `traceparent` either way. Owners and admins. Optional `workspace`.
    set_trace_export(metrics::SetTraceExport) -> metrics::TraceExportView {
        title: "Set trace export", group: Observability, scope: Write, tool: Grouped,
        http: PUT "/v1/trace-export", hints: UPDATES, run: metrics::set_trace_export
    }

    /// Where the workspace's turns are exported as OpenTelemetry spans, if anywhere (the header's value
    /// is never shown). Optional `workspace`.
    get_trace_export(metrics::GetTraceExport) -> metrics::TraceExportView {
        title: "Get trace export", group: Observability, scope: Read, tool: Grouped,
        http: GET "/v1/trace-export", hints: READ_ONLY, run: metrics::get_trace_export
    }

    /// Add credit to a workspace's wallet. Needs the deployment's admin token.
    add_credit(usage::AddCredit) -> usage::Credited {
        title: "Add credit", group: Usage, scope: Admin, tool: RestOnly,
        http: POST "/v1/workspaces/{workspace}/credit", hints: CREATES, run: usage::add_credit
    }

    /// Add money to the wallet by card: returns Stripe's checkout `url` for `amount_cents` (500–100,000);
    /// the balance grows once Stripe reports the payment. Owners and admins. Optional `workspace`.
    top_up(billing::TopUp) -> billing::Checkout {
        title: "Add money", group: Usage, scope: Write, tool: Grouped,
        http: POST "/v1/billing/top-up", hints: CREATES, run: billing::top_up
    }

    /// Save a card for the automatic top-up: returns Stripe's checkout `url` (no charge now); `get_usage`
    /// shows `card_saved` once Stripe reports it. Owners and admins. Optional `workspace`.
    save_card(billing::SaveCard) -> billing::Checkout {
        title: "Save a card", group: Usage, scope: Write, tool: Grouped,
        http: POST "/v1/billing/card", hints: CREATES, run: billing::save_card
    }

    /// Turn the automatic top-up on (`threshold_cents`, `amount_cents`: charged to the saved card when a
    /// model call leaves the balance under the threshold, one top-up at a time) or off. Owners and admins.
    /// Optional `workspace`.
    set_auto_top_up(billing::SetAutoTopUp) -> billing::AutoTopUpSet {
        title: "Set the automatic top-up", group: Usage, scope: Write, tool: Grouped,
        http: PUT "/v1/billing/auto-top-up", hints: UPDATES, run: billing::set_auto_top_up
    }

    /// The wallet's receipts, newest first (amount, when, `checkout`, `auto` or `admin`, Stripe's ids),
    /// with the balance, whether a card is saved and the automatic top-up. Optional `workspace`.
    list_receipts(billing::ListReceipts) -> billing::Receipts {
        title: "List receipts", group: Usage, scope: Read, tool: Grouped,
        http: GET "/v1/billing/receipts", hints: READ_ONLY, run: billing::list_receipts
    }

    /// Set a workspace secret (a model's API key, an MCP server's token): stored sealed, never shown
    /// again. Owners and admins. Optional `workspace`.
    put_secret(secrets::PutSecret) -> secrets::SecretSet {
        title: "Set a secret", group: Secrets, scope: Write, tool: Grouped,
        http: PUT "/v1/secrets/{name}", hints: UPDATES, run: secrets::put
    }

    /// The workspace's secret names (never their values). Optional `workspace`.
    list_secrets(secrets::ListSecrets) -> secrets::SecretList {
        title: "List secrets", group: Secrets, scope: Read, tool: Grouped,
        http: GET "/v1/secrets", hints: READ_ONLY, run: secrets::list
    }

    /// Delete a workspace secret. Owners and admins. Optional `workspace`.
    delete_secret(secrets::DeleteSecret) -> secrets::SecretDeleted {
        title: "Delete a secret", group: Secrets, scope: Write, tool: Grouped,
        http: DELETE "/v1/secrets/{name}", hints: DESTROYS, run: secrets::delete
    }

    /// Delete an agent (by id or `@handle`). Its past sessions stay.
    delete_agent(agents::DeleteAgent) -> agents::AgentDeleted {
        title: "Delete an agent", group: Agents, scope: Write, tool: Grouped,
        http: DELETE "/v1/agents/{agent_id}", hints: DESTROYS, run: agents::delete
    }

    /// Save a company skill (create, or replace one of the same `name`): a `SKILL.md` in the Agent Skills
    /// layout, whose front matter gives `name` and `description`, and optional extra `files`. Every session
    /// of the workspace gets it. Owners and admins. Optional `workspace`.
    put_skill(skills::PutSkill) -> skills::SkillSaved {
        title: "Save a skill", group: Skills, scope: Write, tool: Grouped,
        http: PUT "/v1/skills/{name}", hints: UPDATES, run: skills::put
    }

    /// The workspace's company skills: name and description of each. Optional `workspace`.
    list_skills(skills::ListSkills) -> skills::SkillList {
        title: "List skills", group: Skills, scope: Read, tool: Grouped,
        http: GET "/v1/skills", hints: READ_ONLY, run: skills::list
    }

    /// One company skill in full: its `SKILL.md` and extra files. Optional `workspace`.
    get_skill(skills::GetSkill) -> store::skills::SkillRow {
        title: "Get a skill", group: Skills, scope: Read, tool: Grouped,
        http: GET "/v1/skills/{name}", hints: READ_ONLY, run: skills::get
    }

    /// Delete a company skill; sessions no longer get it. Owners and admins. Optional `workspace`.
    delete_skill(skills::DeleteSkill) -> skills::SkillDeleted {
        title: "Delete a skill", group: Skills, scope: Write, tool: Grouped,
        http: DELETE "/v1/skills/{name}", hints: DESTROYS, run: skills::delete
    }

    // ── Connectors, requests and grants (the session server's operator side) ──

    /// Answer a question, approval or connection a task is waiting on; the waiting agent continues at once.
    answer_request(requests::AnswerRequest) -> requests::RequestAnswered {
        title: "Answer a request", group: Tasks, scope: Write, tool: Own,
        http: POST "/v1/tasks/{task_id}/requests/{request_id}/answer", hints: UPDATES, run: requests::answer
    }

    /// The workspace's open requests across its tasks, newest first: who asks, in which task, what;
    /// `wait_seconds` waits for the next one after `cursor`. Answer with `answer_request`. Optional
    /// `workspace`.
    list_requests(requests::ListRequests) -> requests::RequestList {
        title: "List open requests", group: Tasks, scope: Read, tool: Own,
        http: GET "/v1/requests", hints: READ_ONLY, run: requests::list
    }

    /// How long a request stays open unanswered before it expires (default 24 hours); agents, the
    /// console and `list_requests` then see it `expired`. Owners and admins. Optional `workspace`.
    set_request_expiry(requests::SetRequestExpiry) -> requests::RequestExpiry {
        title: "Set request expiry", group: Tasks, scope: Write, tool: Grouped,
        http: PUT "/v1/requests/expiry", hints: UPDATES, run: requests::set_expiry
    }

    /// Connect a deploy or server target (provider and env) with its credentials, sealed at rest and never
    /// shown back; connecting the same name again replaces its credentials and keeps its policies and
    /// grants. Owners and admins. Optional `workspace`.
    connect_target(connectors::ConnectTarget) -> store::connectors::ConnectorRow {
        title: "Connect a target", group: Connectors, scope: Write, tool: Grouped,
        http: POST "/v1/connectors", hints: UPDATES, run: connectors::connect
    }

    /// The workspace's targets (never their credentials) and access policies. Optional `workspace`.
    list_connectors(connectors::ListConnectors) -> connectors::ConnectorList {
        title: "List targets", group: Connectors, scope: Read, tool: Grouped,
        http: GET "/v1/connectors", hints: READ_ONLY, run: connectors::list
    }

    /// Remove a target and its credentials. Owners and admins.
    delete_connector(connectors::DeleteConnector) -> connectors::ConnectorDeleted {
        title: "Remove a target", group: Connectors, scope: Write, tool: Grouped,
        http: DELETE "/v1/connectors/{connector_id}", hints: DESTROYS, run: connectors::delete
    }

    /// The workspace's grants in force: target, session, scopes, expiry, persistent or not, who decided.
    /// Optional `workspace`.
    list_grants(grants::ListGrants) -> grants::GrantList {
        title: "List grants", group: Connectors, scope: Read, tool: Grouped,
        http: GET "/v1/grants", hints: READ_ONLY, run: grants::list_grants
    }

    /// Revoke a grant (an `always` one too): from the next call on its credential is refused and
    /// `check_grant` answers `denied`. Owners and admins. Recorded in the audit log.
    revoke_grant(grants::RevokeGrant) -> grants::GrantRevoked {
        title: "Revoke a grant", group: Connectors, scope: Write, tool: Grouped,
        http: DELETE "/v1/grants/{grant_id}", hints: DESTROYS, run: grants::revoke_grant
    }

    /// Decide access requests without a person: per target (or workspace-wide) and scope, `ask`, `allow`
    /// or `deny`. Owners and admins.
    set_policy(connectors::SetPolicy) -> store::connectors::PolicyRow {
        title: "Set an access policy", group: Connectors, scope: Write, tool: Grouped,
        http: PUT "/v1/policies", hints: UPDATES, run: connectors::set_policy
    }

    /// Connect a Slack app: new requests are posted to `channel` with buttons that answer them (production
    /// deploys and deletes, and `always`, open agentsky instead). Owners and admins.
    connect_slack(slack::ConnectSlack) -> store::slack::SlackConnection {
        title: "Connect Slack", group: Connectors, scope: Write, tool: Grouped,
        http: PUT "/v1/slack", hints: UPDATES, run: slack::connect, credentials: true
    }

    /// Disconnect the workspace's Slack app. Owners and admins.
    disconnect_slack(slack::DisconnectSlack) -> slack::SlackDisconnected {
        title: "Disconnect Slack", group: Connectors, scope: Write, tool: Grouped,
        http: DELETE "/v1/slack", hints: DESTROYS, run: slack::disconnect
    }

    /// A one-time code (10 minutes) that links your Slack user: send `/agentsky link <code>` in Slack, and
    /// its buttons answer as you, with your role.
    link_slack(slack::LinkSlack) -> slack::SlackLinkCode {
        title: "Link your Slack user", group: Connectors, scope: Write, tool: Grouped,
        http: POST "/v1/slack/link-code", hints: CREATES, run: slack::link, credentials: true
    }

    /// Require more than one owner or admin to approve a `deploy` or `delete` on a production target, and
    /// optionally a fresh console sign-in for each approval. Owners and admins.
    set_approval_rule(connectors::SetApprovalRule) -> store::connectors::ApprovalRuleRow {
        title: "Set a target's approval rule", group: Connectors, scope: Write, tool: Grouped,
        http: PUT "/v1/connectors/{connector_id}/approval-rule", hints: UPDATES, run: connectors::set_approval_rule
    }

    /// The audit log, newest first: every use of a credential, and every change to invitations, members,
    /// roles, access approvals and policies, with who made it. Optional `workspace`.
    list_audit(audit::ListAudit) -> audit::AuditLog {
        title: "Read the audit log", group: Connectors, scope: Read, tool: Grouped,
        http: GET "/v1/audit", hints: READ_ONLY, run: audit::audit
    }

    /// A bearer token for the session server (`POST /v1/session/mcp`), for an agent harness outside
    /// agentsky; shown once, dead when the session ends.
    issue_session_token(session_tokens::IssueSessionToken) -> session_tokens::SessionToken {
        title: "Issue a session token", group: Sessions, scope: Write, tool: Grouped,
        http: POST "/v1/sessions/{session_id}/token" 201, hints: CREATES, run: session_tokens::issue_token, credentials: true
    }

    /// A task's lanes (each session works in its own copy until it lands), review mode and base branch name.
    set_task_settings(tasks::TaskSettings) -> store::lanes::TaskSettings {
        title: "Set a task's settings", group: Tasks, scope: Write, tool: Grouped,
        http: PUT "/v1/tasks/{task_id}/settings", hints: UPDATES, run: tasks::set_settings
    }

    /// Have a session's agent work out its task's `run` or `deploy` command and teach it (the console's Run
    /// locally and Deploy buttons, when no command is known yet): a session of the same task and agent is
    /// started with the question; the command it remembers is the task's.
    ask_command(commands::AskCommand) -> commands::Asked {
        title: "Ask for a command", group: Sessions, scope: Write, tool: Grouped,
        http: POST "/v1/sessions/{session_id}/ask", hints: UPDATES, run: commands::ask_command
    }

    /// Run a session's taught `run` command, or a target's `deploy` command, on the runner that holds the
    /// session's turn (the console's Run locally and Deploy buttons); returns its exit code and last output.
    run_command(commands::RunCommand) -> commands::CommandRun {
        title: "Run a taught command", group: Sessions, scope: Write, tool: Grouped,
        http: POST "/v1/sessions/{session_id}/run", hints: CREATES, run: commands::run
    }

    // ── Memory, search, records, performance and the help center ──

    /// Search your saved memory, past conversations, or (`scope: "traces"`) the workspace's uploaded local
    /// agent sessions, a page at a time. Optional `workspace` for traces.
    search_context(context::SearchContext) -> context::ContextHits {
        title: "Search context", group: Context, scope: Read, tool: Own,
        http: GET "/v1/context/search", hints: READ_ONLY, run: context::search
    }

    /// Read a `search_context` hit in full: pass its `ref` unchanged; `nextOffset` → `offset` continues a
    /// long message.
    read_context(context::ReadContext) -> context::ContextRead {
        title: "Read context", group: Context, scope: Read, tool: Own,
        http: GET "/v1/context/read", hints: READ_ONLY, run: context::read
    }

    /// Save a note to your memory (1–8,000 characters), where `search_context` finds it later. Saving the
    /// same text again keeps one entry. Optional `workspace`.
    save_memory(memory::SaveMemory) -> memory::MemoryEntry {
        title: "Save to memory", group: Context, scope: Write, tool: Grouped,
        http: POST "/v1/memory" 201, hints: UPDATES, run: memory::save
    }

    /// Your memory entries, newest first. Optional `workspace` narrows to one workspace.
    list_memory(memory::ListMemory) -> memory::MemoryList {
        title: "List memory", group: Context, scope: Read, tool: Grouped,
        http: GET "/v1/memory", hints: READ_ONLY, run: memory::list
    }

    /// Delete one of your memory entries.
    delete_memory(memory::DeleteMemory) -> memory::MemoryDeleted {
        title: "Delete from memory", group: Context, scope: Write, tool: Grouped,
        http: DELETE "/v1/memory/{memory_id}", hints: DESTROYS, run: memory::delete
    }

    /// Upload a local agent's session log to the workspace's trace library: `content` is the whole
    /// `.jsonl` file a Claude Code session or a Codex rollout wrote (up to 3 MiB); it is parsed into messages
    /// and indexed for `search_context` with `scope: "traces"`. The same file again returns the same trace.
    /// Optional `workspace`.
    upload_trace(traces::UploadTrace) -> traces::TraceUploaded {
        title: "Upload a trace", group: Context, scope: Write, tool: Grouped,
        http: POST "/v1/traces" 201, hints: UPDATES, run: traces::upload
    }

    /// The workspace's trace library, newest first. Optional `workspace`.
    list_traces(traces::ListTraces) -> traces::TraceList {
        title: "List traces", group: Context, scope: Read, tool: Grouped,
        http: GET "/v1/traces", hints: READ_ONLY, run: traces::list
    }

    /// Remove a trace from the library, and from search.
    delete_trace(traces::DeleteTrace) -> traces::TraceDeleted {
        title: "Delete a trace", group: Context, scope: Write, tool: Grouped,
        http: DELETE "/v1/traces/{trace_id}", hints: DESTROYS, run: traces::delete
    }

    /// Record a human decision (`adopted`, `rerun`, `revise`, `discard`, `vote`, `did_the_job`, `approve`) or
    /// an observed outcome (`pr_merged`, `deployed`, `reopened`, `later_failure`, `shipped`) about a
    /// session's result, as you, now. `idempotency_key` makes a retry record once.
    record_session(records::RecordSession) -> records::Recorded {
        title: "Record a decision or outcome", group: Records, scope: Write, tool: Grouped,
        http: POST "/v1/sessions/{session_id}/record" 201, hints: CREATES, run: records::record
    }

    /// The human decisions (adopted, rerun, revise, discard, vote, did_the_job, approve) and outcomes
    /// (pr_merged, deployed, reopened, later_failure, shipped) recorded about a session; empty if none yet.
    read_session_record(records::ReadSessionRecord) -> records::SessionRecord {
        title: "Read a session's record", group: Records, scope: Read, tool: Own,
        http: GET "/v1/sessions/{session_id}/record", hints: READ_ONLY, run: records::read
    }

    /// Decisions, outcomes, spend and undecided count per harness and model of your sessions, `since`–`until`
    /// (default the last 30 days).
    read_agent_performance(records::ReadAgentPerformance) -> records::AgentPerformance {
        title: "Read agent performance", group: Records, scope: Read, tool: Own,
        http: GET "/v1/performance", hints: READ_ONLY, run: records::performance
    }

    /// Make (or replace) the workspace's records webhook: returns its `url` and a new `secret`, once.
    /// GitHub pull request and deployment events naming a session record `pr_merged`, `reopened`,
    /// `deployed` or `later_failure`; scripts post `{session_id, name}` with the secret as a bearer.
    /// Owners and admins.
    create_record_webhook(records::CreateRecordWebhook) -> records::RecordWebhook {
        title: "Create the records webhook", group: Records, scope: Write, tool: Grouped,
        http: POST "/v1/workspaces/{workspace}/records-webhook" 201, hints: CREATES, run: records::create_webhook, credentials: true
    }

    /// Send the workspace's events to an HTTPS endpoint, signed by the Standard Webhooks convention:
    /// `url`, the `events` to send, `format` (`standard` or `slack`). Returns the signing secret once.
    /// Owners and admins. Optional `workspace`.
    create_webhook(webhooks::CreateWebhook) -> webhooks::WebhookCreated {
        title: "Create a webhook", group: Webhooks, scope: Write, tool: Grouped,
        http: POST "/v1/webhooks" 201, hints: CREATES, run: webhooks::create
    }

    /// The workspace's webhook endpoints (never their secrets) and newest deliveries: delivered, pending
    /// retry, or failed after the retry budget with the receiver's last answer. Optional `workspace`.
    list_webhooks(webhooks::ListWebhooks) -> webhooks::WebhookList {
        title: "List webhooks", group: Webhooks, scope: Read, tool: Grouped,
        http: GET "/v1/webhooks", hints: READ_ONLY, run: webhooks::list
    }

    /// Delete a webhook endpoint; nothing more is sent to it. Owners and admins. Optional `workspace`.
    delete_webhook(webhooks::DeleteWebhook) -> webhooks::WebhookDeleted {
        title: "Delete a webhook", group: Webhooks, scope: Write, tool: Grouped,
        http: DELETE "/v1/webhooks/{webhook_id}", hints: DESTROYS, run: webhooks::delete
    }

    /// A new signing secret for a webhook endpoint, shown once; the old one keeps signing beside it for
    /// `overlap_hours` (default 24) so the receiver can switch. Owners and admins. Optional `workspace`.
    rotate_webhook_secret(webhooks::RotateWebhookSecret) -> webhooks::WebhookSecretRotated {
        title: "Rotate a webhook's secret", group: Webhooks, scope: Write, tool: Grouped,
        http: POST "/v1/webhooks/{webhook_id}/rotate", hints: CREATES, run: webhooks::rotate
    }

    /// Send a `webhook.test` event to one endpoint now, through the same queue, signing and retries as
    /// real events. Owners and admins. Optional `workspace`.
    test_webhook(webhooks::TestWebhook) -> webhooks::WebhookTestSent {
        title: "Send a test event", group: Webhooks, scope: Write, tool: Grouped,
        http: POST "/v1/webhooks/{webhook_id}/test", hints: CREATES, run: webhooks::test
    }

    /// Search the AgentSky Help Center in English or Chinese; answer with the article's link,
    /// `agentsky.dev/help/<slug>` (the hit's `url`).
    help_search(help_center::HelpSearch) -> help_center::HelpHits {
        title: "Search the Help Center", group: Help, scope: Read, tool: Own,
        http: GET "/v1/help/articles", hints: READ_ONLY, run: help_center::search
    }

    /// Read one Help Center article by its `slug`; answer with its link, `agentsky.dev/help/<slug>` (the
    /// `url`).
    help_get(help_center::HelpGet) -> help_center::HelpArticle {
        title: "Read a Help Center article", group: Help, scope: Read, tool: Own,
        http: GET "/v1/help/articles/{slug}", hints: READ_ONLY, run: help_center::get
    }

    // ── Device sign-in and runners (the sky CLI) ──

    /// Register a runner (a machine running `sky runner`) for the workspace's `runner` agents; returns its
    /// token once. Owners and admins. Optional `workspace`.
    register_runner(runners::RegisterRunner) -> runners::RunnerRegistered {
        title: "Register a runner", group: Runners, scope: Write, tool: Grouped,
        http: POST "/v1/runners" 201, hints: CREATES, run: runners::register, credentials: true
    }

    /// The workspace's runners: name, when each was last seen, and the session whose turn it runs now.
    /// Optional `workspace`.
    list_runners(runners::ListRunners) -> runners::RunnerList {
        title: "List runners", group: Runners, scope: Read, tool: Grouped,
        http: GET "/v1/runners", hints: READ_ONLY, run: runners::list
    }

    /// Revoke a runner: its token is refused from the next call on, and a turn it held goes back to the
    /// queue for another runner. Owners and admins.
    revoke_runner(runners::RevokeRunner) -> runners::RunnerRevoked {
        title: "Revoke a runner", group: Runners, scope: Write, tool: Grouped,
        http: DELETE "/v1/runners/{runner_id}", hints: DESTROYS, run: runners::revoke, credentials: true
    }

    /// Start a device sign-in (`sky auth login`): returns a `device_code` to poll with, and a `user_code`
    /// and link (`verification_uri_complete`) for the person to approve in a browser. No key needed.
    request_device_code(device::RequestDeviceCode) -> device::DeviceCode {
        title: "Start a device sign-in", group: Keys, scope: Public, tool: RestOnly,
        http: POST "/v1/device/code" 201, hints: CREATES, run: device::request_code
    }

    /// The deployment's Web Push (VAPID) public key, for a browser's `pushManager.subscribe`
    /// (`applicationServerKey`). Made once per deployment on first need; needs `SECRETS_KEY`. No key
    /// needed: it is public.
    push_vapid_key(push::PushVapidKey) -> push::VapidKey {
        title: "Get the Web Push key", group: Keys, scope: Public, tool: RestOnly,
        http: GET "/v1/push/vapid-key", hints: READ_ONLY, run: push::vapid_key
    }

    /// Subscribe a browser to pushes: the Push API's `PushSubscription` JSON (`endpoint`, `keys.p256dh`,
    /// `keys.auth`). A new request in a workspace you belong to is pushed to it, with buttons that answer
    /// a decision or a safe access request as you. The same endpoint again replaces its keys.
    subscribe_push(push::SubscribePush) -> push::PushSubscribed {
        title: "Subscribe a browser to pushes", group: Keys, scope: Write, tool: RestOnly,
        http: POST "/v1/push/subscriptions", hints: UPDATES, run: push::subscribe
    }

    /// Your browsers and devices that take pushes: endpoint, label, when subscribed and last reached.
    list_push_subscriptions(push::ListPushSubscriptions) -> push::PushSubscriptions {
        title: "List push subscriptions", group: Keys, scope: Read, tool: Grouped,
        http: GET "/v1/push/subscriptions", hints: READ_ONLY, run: push::list
    }

    /// Stop pushing to one of your devices.
    delete_push_subscription(push::DeletePushSubscription) -> push::PushSubscriptionDeleted {
        title: "Remove a push subscription", group: Keys, scope: Write, tool: Grouped,
        http: DELETE "/v1/push/subscriptions/{subscription_id}", hints: DESTROYS, run: push::delete
    }

    /// Poll a device sign-in every `interval` seconds: `authorization_pending` until the person decides
    /// (`slow_down` when polled too fast), then the new key named for the device, once; `access_denied`
    /// or `expired_token` end it. No key needed.
    poll_device_token(device::PollDeviceToken) -> device::DeviceToken {
        title: "Collect a device sign-in", group: Keys, scope: Public, tool: RestOnly,
        http: POST "/v1/device/token", hints: CREATES, run: device::poll
    }
}

/// Finds an operation by name.
pub fn find(name: &str) -> Option<&'static Op> {
    OPS.iter().find(|op| op.name == name)
}

/// A failed decode of the params is an `invalid_params` error naming the field and the rule.
fn decode_params<P: DeserializeOwned>(args: Value) -> Result<P, ApiError> {
    crate::rules::params::decode(args).map_err(ApiError::invalid)
}

fn encode<R: Serialize>(result: &R) -> Result<Value, ApiError> {
    serde_json::to_value(result).map_err(ApiError::cause)
}

/// The one way an operation is called, from every face: scope first, then the per-key rate limit,
/// then the handler.
pub async fn invoke(cx: &Cx<'_>, op: &Op, args: Value) -> Result<Value, ApiError> {
    invoke_with(cx, op, (op.run)(cx, args)).await
}

/// [`invoke`] around a handler's call not yet started (by name from JSON, or typed from [`call`]). The
/// checks are compiled once, not once per row's answer type: the answer passes through them boxed and
/// is unboxed here.
async fn invoke_with<T: 'static>(
    cx: &Cx<'_>,
    op: &Op,
    handler: impl Future<Output = Result<T, ApiError>>,
) -> Result<T, ApiError> {
    let boxed: LocalBoxFuture<'_, Result<Answer, ApiError>> =
        Box::pin(async move { handler.await.map(|answer| Box::new(answer) as Answer) });
    let answer = invoke_boxed(cx, op, boxed).await?;
    answer.downcast::<T>().map(|a| *a).map_err(|_| ApiError::cause("an operation answered another row's type"))
}

/// What a handler answers, on its way through the checks.
type Answer = Box<dyn std::any::Any>;

async fn invoke_boxed(
    cx: &Cx<'_>,
    op: &Op,
    handler: LocalBoxFuture<'_, Result<Answer, ApiError>>,
) -> Result<Answer, ApiError> {
    // Every face answers through here, so an internal failure is finished (logged with the request id) once.
    let result = checked_run(cx, op, handler).await.map_err(|e| e.finish(&cx.request_id));
    // The request's log line names the operation, the key (its id) and how it ended.
    cx.env.meter.label(|l| {
        if l.op.is_empty() {
            l.op = op.name.to_owned();
        }
        if let Some(c) = &cx.caller {
            l.key_id.clone_from(&c.key_id);
        }
        match &result {
            Err(e) => {
                l.error_code = e.code.as_str().to_owned();
                // A call refused before it found its workspace still counts, in the caller's default one.
                if l.workspace_id.is_empty() {
                    l.workspace_id = cx.default_workspace_id().unwrap_or_default();
                }
            }
            // The last call decides: a call run again for a changed caller ended well, whatever the first
            // run (refused when the key's lookup disagreed) said.
            Ok(_) => l.error_code.clear(),
        }
    });
    result
}

/// Counts one request against the calling key's per-minute limit, on the same D1 bucket every operation
/// counts on (MCP task methods, which are no operation, count this way).
pub async fn rate_limit_key(cx: &Cx<'_>) -> Result<(), ApiError> {
    let caller = cx.caller()?;
    let limit = cx.env.config.rate_limit_per_min;
    let rows = cx.db().batch(store::rate::hit(&format!("key:{}", caller.key_id), limit, cx.now_ms)).await?;
    rate_decided(store::rate::decision(&rows, limit, cx.now_ms)?, limit)
}

/// Refuses an app's OAuth token where only a person's own key may act: what it minted or changed would
/// outlive the app's disconnection.
pub fn not_an_app(caller: &crate::identity::Caller, what: &str) -> Result<(), ApiError> {
    match caller.app {
        None => Ok(()),
        Some(_) => Err(ApiError::new(
            Code::Forbidden,
            format!(
                "{what} needs your own API key or the console: an app connected through OAuth cannot create credentials \
                 or change members, since they would outlive its disconnection"
            ),
        )),
    }
}

async fn checked_run(
    cx: &Cx<'_>,
    op: &Op,
    handler: LocalBoxFuture<'_, Result<Answer, ApiError>>,
) -> Result<Answer, ApiError> {
    if op.scope == Scope::Admin && !cx.admin {
        return Err(ApiError::new(Code::Forbidden, format!("`{}` needs the deployment's admin token", op.name)));
    }
    if op.scope == Scope::Read || op.scope == Scope::Write {
        let caller = cx.caller()?;
        if op.scope == Scope::Write && !caller.can_write {
            return Err(ApiError::new(
                Code::InsufficientScope,
                format!("`{}` needs a key with the write scope; this key is read-only", op.name),
            ));
        }
        if op.credentials {
            not_an_app(caller, &format!("`{}`", op.name))?;
        }
        // Decided by the scope, never by an MCP hint: a hint is what clients are told, not a permission.
        let reads = op.scope == Scope::Read;
        // The call is counted on its key's bucket in the same D1 batch as its first statement (and the key
        // lookup, when that rides too): no round trip of its own.
        let limit = cx.env.config.rate_limit_per_min;
        let counted = cx.env.db.ride(store::rate::hit(&format!("key:{}", caller.key_id), limit, cx.now_ms));
        let judged = async {
            // A caller from the key cache: the lookup riding the same batch must agree.
            if let Some(verdict) = &cx.verdict {
                if verdict.clone().await != Ok(true) {
                    return Err(ApiError::new(
                        Code::Unauthorized,
                        "this key changed while the call started; it was not run",
                    ));
                }
            }
            let rows = counted.await.map_err(|_| ApiError::cause("the rate count was never sent"))??;
            rate_decided(store::rate::decision(&rows, limit, cx.now_ms)?, limit)
        };
        if reads {
            // A read changes nothing, so it runs while the count and the lookup are under way (they ride
            // with its first statement, or go alone once it is done); a key over its limit drops it at once.
            let read = async {
                let result = handler.await;
                cx.env.db.flush().await;
                result
            };
            let ((), result) = futures::try_join!(judged, read)?;
            return Ok(result);
        }
        // A write changes nothing before its key is known and the call counted.
        cx.env.db.flush().await;
        judged.await?;
    }
    run(cx, op, handler).await
}

async fn run(cx: &Cx<'_>, op: &Op, handler: LocalBoxFuture<'_, Result<Answer, ApiError>>) -> Result<Answer, ApiError> {
    let result = handler.await?;
    if !op.hints.read_only {
        let touched = cx.touched.borrow_mut().take();
        if let Some(workspace_id) = touched {
            // Best effort: a watcher that misses this wake-up still sees the change on its next wait.
            let _ = cx.env.feeds.bump(&workspace_id).await;
        }
    }
    Ok(result)
}
