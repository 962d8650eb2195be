//! The session server (`POST /v1/session/mcp`): the tools every running agent gets, bound to its
//! own session by a session token (contract: `agent-tools.md`). Its "project" is our task, its "task" is
//! our session, its "targets" are the workspace's connectors, "you" are the workspace's members.
//!
//! Results are JSON text; errors are MCP error results whose text ends with the code, e.g.
//! `too many access requests; try again in a minute (code -32003)`.

mod access;
mod asking;
mod landing;
mod peers;
mod pushing;

use crate::cx::Cx;
use crate::error::{ApiError, Code};
use crate::mcp::{CallOutcome, ToolCall, ToolHost, ToolReply};
use crate::rules::schema::Published;
use crate::session::calls;
use crate::store::requests::{RequestRow, RequestStatus};
use crate::store::{self, sessions::SessionRow};
use futures::future::LocalBoxFuture;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

pub use access::decide_access;

/// How long a tool that waits for a person holds the call (the contract's 5 minutes).
pub const WAIT_MS: i64 = 5 * 60_000;

/// A session-tool failure: the text the agent reads and the code it ends with.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError {
    pub code: i64,
    pub message: String,
    /// An internal failure not yet finished by the face ([`ToolError::finish`]): never shown to the agent.
    unfinished: Option<ApiError>,
}

impl ToolError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), unfinished: None }
    }
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(-32602, message)
    }
    pub fn refused(message: impl Into<String>) -> Self {
        Self::new(-32002, message)
    }
    pub fn unknown(message: impl Into<String>) -> Self {
        Self::new(-32001, message)
    }
}

impl ToolError {
    /// What the agent reads: an internal failure's cause is logged once with the request id (as
    /// [`ApiError::finish`] does), and the message names only that id.
    pub fn finish(mut self, request_id: &str) -> Self {
        if let Some(e) = self.unfinished.take() {
            self.message = e.finish(request_id).message;
        }
        self
    }
}

impl From<ApiError> for ToolError {
    fn from(e: ApiError) -> Self {
        let unfinished = e.is_unfinished().then(|| e.clone());
        Self { unfinished, ..Self::new(e.code.rpc(), e.message) }
    }
}

impl From<store::DbError> for ToolError {
    fn from(e: store::DbError) -> Self {
        ApiError::from(e).into()
    }
}

pub type ToolResult = Result<Value, ToolError>;

/// The calling session, resolved from its token, with the request context.
pub struct CallingSession<'a> {
    pub cx: &'a Cx<'a>,
    pub me: SessionRow,
    /// How long tools that wait for a person hold the call: the contract's 5 minutes over MCP; 0 inside a
    /// harness, which instead pauses the turn durably until the answer lands.
    pub wait_ms: i64,
    /// Where a waiting tool reports that it is still waiting, when the client asked for progress: clients
    /// give up on a call after their own timeout (60 s in the official SDKs) unless progress resets it.
    pub progress: Option<&'a crate::mcp::Progress>,
}

impl<'a> CallingSession<'a> {
    /// The agent behind an MCP call, waiting as the deployment says.
    pub fn new(cx: &'a Cx<'a>, me: SessionRow) -> Self {
        let wait_ms = cx.env.config.agent_wait_ms.unwrap_or(WAIT_MS);
        Self { cx, me, wait_ms, progress: None }
    }

    /// Counts one hit on one of this session's per-minute buckets; `what` names it in the error, which
    /// says how long to wait (the contract's "try again in a minute", made exact).
    pub async fn bucket(&self, bucket: &str, limit: u32, what: &str) -> Result<(), ToolError> {
        let key = format!("session:{}:{bucket}", self.me.session_id);
        crate::domain::rate::rate_limit(self.cx, key, limit).await.map_err(|e| match (e.code, e.retry_after_ms) {
            (Code::RateLimited, Some(ms)) => ToolError::new(
                -32003,
                format!("too many {what} ({limit} a minute); try again in {}", crate::rules::rate::seconds(ms)),
            ),
            _ => e.into(),
        })
    }

    /// Tells the people watching this workspace (the console, `sky approvals`, `list_requests`) that
    /// something changed: a request opened or ended, a status, a landing. Best effort: a watcher that
    /// misses it sees the change on its next look.
    pub async fn changed(&self) {
        let _ = self.cx.env.feeds.bump(&self.me.workspace_id).await;
    }

    pub fn internal(&self, e: impl std::fmt::Display) -> ToolError {
        ApiError::cause(e).into()
    }
}

/// Waits in this session's object until the request is answered or the wait ends (no wait inside a
/// harness: `wait_ms` 0), then gives the request as it stands. A request that ended without an answer
/// (its session ended, the agent withdrew it) is the call's error; one past its time is expired here.
///
/// A client that asked for progress hears every [`KEEPALIVE_MS`] that the call still waits, so its own
/// timeout starts again; when it has gone meanwhile, the request is left open for its retry (which the
/// tools answer from the same request) instead of ending unanswered.
pub(crate) async fn wait(a: &CallingSession<'_>, request_id: &str) -> Result<RequestRow, ToolError> {
    let mut req = current(a, request_id).await?;
    if req.status != RequestStatus::Open || a.wait_ms <= 0 {
        return ended(req);
    }
    let step = if a.progress.is_some() { KEEPALIVE_MS.min(a.wait_ms) } else { a.wait_ms };
    let steps = (a.wait_ms + step - 1) / step;
    for n in 1..=steps {
        let wait_ms = step.min(a.wait_ms - (n - 1) * step);
        let call = calls::Wait { key: request_id.to_owned(), wait_ms };
        let signaled = crate::domain::sessions::call(a.cx, &a.me.session_id, call).await?;
        req = current(a, request_id).await?;
        if signaled || req.status != RequestStatus::Open || n == steps {
            break;
        }
        if let Some(progress) = a.progress {
            let waited = (n * step / 1000) as f64;
            let what = format!("waiting for a person to answer request {request_id} ({waited} s so far)");
            if !progress.report(waited, Some((a.wait_ms / 1000) as f64), Some(&what)) {
                return Err(ToolError::new(-32004, "the client stopped waiting; the request stays open for a retry"));
            }
        }
    }
    ended(req)
}

/// How often a waiting tool tells a client that asked for progress that it still waits.
pub const KEEPALIVE_MS: i64 = 15_000;

/// A request as it stands now, expired first when its time has passed.
async fn current(a: &CallingSession<'_>, request_id: &str) -> Result<RequestRow, ToolError> {
    let db = a.cx.db();
    let req = store::requests::get_request(db, request_id)
        .await?
        .ok_or_else(|| ToolError::refused(format!("session ended: request {request_id} is gone")))?;
    if req.status == RequestStatus::Open && req.expires_ms.is_some_and(|e| e <= a.cx.clock_now()) {
        crate::domain::requests::expire(a.cx, &req).await.map_err(ToolError::from)?;
        return store::requests::get_request(db, request_id).await?.ok_or_else(|| a.internal("request vanished"));
    }
    Ok(req)
}

/// The error of a request that ended without an answer; the request itself otherwise.
pub(crate) fn ended(req: RequestRow) -> Result<RequestRow, ToolError> {
    match req.status {
        RequestStatus::Closed => Err(ToolError::refused(format!(
            "session ended: this session was stopped, so request {} was closed unanswered",
            req.request_id
        ))),
        RequestStatus::Withdrawn => {
            Err(ToolError::refused(format!("request {} was withdrawn by this session", req.request_id)))
        }
        _ => Ok(req),
    }
}

/// Per-session buckets, per minute (the contract's table).
pub const ACCESS_PER_MIN: u32 = 5;
pub const QUESTIONS_PER_MIN: u32 = 30;
pub const MESSAGES_PER_MIN: u32 = 20;

/// One session tool, declared once in [`session_tools!`].
struct Tool {
    name: &'static str,
    /// The `///` lines of the row: the description clients and harness models read.
    docs: &'static [&'static str],
    schema: Published,
    run: ToolFn,
    /// Whether a call changes what a person sees, so the workspace's watchers are told after it.
    changes: bool,
}

type ToolFn = for<'a, 'b> fn(&'b CallingSession<'a>, Value) -> LocalBoxFuture<'b, ToolResult>;

impl Tool {
    fn description(&self) -> String {
        self.docs.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ")
    }

    fn schema_key(&self) -> String {
        format!("session_tool:{}", self.name)
    }

    fn input_schema(&self) -> Value {
        crate::mcp::results::for_models(self.schema.get(&self.schema_key()))
    }
}

/// The session tools' schemas as published (`src/schemas.json`), derived from their types.
#[cfg(not(target_arch = "wasm32"))]
pub fn published_schemas() -> Vec<(String, Value)> {
    TOOLS.iter().map(|t| (t.schema_key(), t.schema.get(&t.schema_key()))).collect()
}

/// Declares the tools. Each row: docs, `name(Params) => run, changes: bool;`. A tool without arguments
/// is `name() => run` (its schema is [`access::NoParams`]; whatever it is sent is ignored).
macro_rules! session_tools {
    ($($(#[doc = $doc:literal])* $name:ident($($params:ty)?) => $run:path, changes: $changes:literal;)*) => {
        const TOOLS: &[Tool] = &[$(Tool {
            name: stringify!($name),
            docs: &[$($doc),*],
            schema: session_tools!(@schema $($params)?),
            run: |a, args| Box::pin(async move { session_tools!(@run a, args, $run $(, $params)?) }),
            changes: $changes,
        }),*];
    };
    (@schema) => { Published::input::<access::NoParams>() };
    (@schema $params:ty) => { Published::input::<$params>() };
    (@run $a:ident, $args:ident, $run:path) => {{
        let _ = $args;
        out($run($a).await)
    }};
    // Decodes the arguments, then runs the tool; a bad argument is the tool's error, not the call's.
    (@run $a:ident, $args:ident, $run:path, $params:ty) => {
        match parse::<$params>($args) {
            Ok(p) => out($run($a, p).await),
            Err(e) => Err(e),
        }
    };
}

session_tools! {
    /// Ask the user for scoped, expiring access to one of the project's targets. A policy can decide it
    /// without asking. After a grant, just run the provider CLI (vercel, gh, aws, gcloud, supabase, ssh): it
    /// already uses the grant. Waits up to 5 minutes; then returns pending with a grantId for check_grant.
    request_access(access::RequestAccess) => access::request_access, changes: false;
    /// Check, and wait up to 5 minutes for, the outcome of an access request.
    check_grant(access::CheckGrant) => access::check_grant, changes: false;
    /// The credentials of a live grant as environment variables, for calling a provider's API directly
    /// (provider CLIs get them by themselves). Recorded in the audit log.
    get_credential(access::GetCredential) => access::get_credential, changes: false;
    /// The deploy and server targets connected to this project, with their lock state and the scopes this
    /// task's grants cover.
    list_targets() => access::list_targets, changes: false;
    /// Set the one-line status shown on this task's card (up to 200 characters; empty clears it).
    report_status(asking::ReportStatus) => asking::report_status, changes: true;
    /// Ask the user a question, offer a choice, or ask them to approve a plan, and wait (up to 5 minutes)
    /// for the answer. Asking the same thing again (a retry) waits on the same request, and within 10
    /// minutes of its answer returns that answer.
    ask_user(asking::AskUser) => asking::ask_user, changes: false;
    /// Take back one of this session's open requests (an access request or a question) that you no longer
    /// need; whoever waits on it is told it was withdrawn.
    withdraw_request(asking::WithdrawRequest) => asking::withdraw_request, changes: false;
    /// The tasks in this project: you and your peers, what each was asked to do, the files its lane changed
    /// and which of them you changed too.
    list_sessions() => peers::list_sessions, changes: false;
    /// What changed in the project outside your lane: base commits you have not merged, the other live
    /// lanes, and files another task changed too. Read it before touching files another task has changed.
    project_activity() => peers::project_activity, changes: false;
    /// Send a message to another task in this project, for handing over context or flagging a conflict (not
    /// for giving orders). It appears in that task's chat, marked as from a peer.
    send_message(peers::SendMessage) => peers::send_message, changes: true;
    /// Teach agentsky a command you just got working (run, deploy or checks), when agentsky asked this task
    /// for it; otherwise give the command to the user instead.
    remember_command(landing::RememberCommand) => landing::remember_command, changes: true;
    /// Land this task's work in the project's base: merge the base in, run the project's checks, merge into
    /// the base with the summary as the record. Call it when the user asks you to merge, land or push.
    land(landing::Land) => landing::land, changes: true;
}

fn find(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|t| t.name == name)
}

/// The session server's tools, bound to one calling session.
pub struct SessionTools<'a> {
    pub agent: CallingSession<'a>,
}

fn parse<P: DeserializeOwned>(args: Value) -> Result<P, ToolError> {
    crate::rules::params::decode(args).map_err(ToolError::invalid)
}

fn out<R: Serialize>(r: Result<R, ToolError>) -> ToolResult {
    r.map(|v| serde_json::to_value(v).unwrap_or(Value::Null))
}

impl SessionTools<'_> {
    async fn run(&self, name: &str, args: Value) -> Option<ToolResult> {
        let tool = find(name)?;
        let result = (tool.run)(&self.agent, args).await;
        // Requests announce themselves when they open (they then wait); these change what a person sees.
        if tool.changes {
            self.agent.changed().await;
        }
        Some(result)
    }
}

/// A tool's result as MCP sees it: JSON text, or an error result ending with its code.
pub fn result(r: ToolResult) -> Value {
    match r {
        // MCP's structuredContent is an object; list results (arrays) go as text only.
        Ok(v) if v.is_object() => {
            json!({ "content": [{ "type": "text", "text": v.to_string() }], "structuredContent": v, "isError": false })
        }
        Ok(v) => json!({ "content": [{ "type": "text", "text": v.to_string() }], "isError": false }),
        Err(e) => json!({
            "content": [{ "type": "text", "text": format!("{} (code {})", e.message, e.code) }],
            "isError": true,
        }),
    }
}

impl ToolHost for SessionTools<'_> {
    fn tools(&self) -> Vec<Value> {
        TOOLS
            .iter()
            .map(|t| json!({ "name": t.name, "description": t.description(), "inputSchema": t.input_schema() }))
            .collect()
    }

    fn call<'a>(&'a self, name: &'a str, arguments: Value) -> LocalBoxFuture<'a, CallOutcome> {
        Box::pin(async move {
            let outcome = match self.run(name, arguments).await {
                Some(r) => r,
                None => return None,
            };
            Some(result(outcome.map_err(|e| e.finish(&self.agent.cx.request_id))))
        })
    }

    /// A call whose client asked for progress waits with it ([`wait`]).
    fn call_with<'a>(&'a self, call: ToolCall<'a>) -> LocalBoxFuture<'a, ToolReply> {
        Box::pin(async move {
            let arguments = Value::Object(call.arguments.into_owned());
            let outcome = match call.progress {
                None => self.call(call.name, arguments).await,
                Some(progress) => {
                    let agent = CallingSession { me: self.agent.me.clone(), progress: Some(progress), ..self.agent };
                    SessionTools { agent }.call(call.name, arguments).await
                }
            };
            outcome.map_or(ToolReply::UnknownTool, ToolReply::Done)
        })
    }
}

/// What a harness gets from a session tool: a result now, or a request whose answer it waits for.
pub enum HarnessCall {
    Done(ToolResult),
    /// The turn pauses until the request is answered (or the wait runs out), then resumes with
    /// [`harness_resume`].
    Awaiting {
        request_id: String,
        kind: String,
        grant_id: Option<String>,
    },
}

/// Runs a session tool for a harness inside the session: nothing waits in the call.
pub async fn harness_call(agent: CallingSession<'_>, name: &str, args: Value) -> HarnessCall {
    let request_id = agent.cx.request_id.clone();
    match harness_run(agent, name, args).await {
        HarnessCall::Done(r) => HarnessCall::Done(r.map_err(|e| e.finish(&request_id))),
        awaiting => awaiting,
    }
}

async fn harness_run(agent: CallingSession<'_>, name: &str, args: Value) -> HarnessCall {
    let agent = CallingSession { wait_ms: 0, ..agent };
    if name == "ask_user" {
        return match parse::<asking::AskUser>(args) {
            Ok(p) => match asking::open(&agent, p).await {
                // Nothing would wake a pause on a request answered already: its answer is the result now.
                Ok(asked) if asked.answered => HarnessCall::Done(asking::answer_of(&agent, &asked.request_id).await),
                Ok(asked) => {
                    HarnessCall::Awaiting { request_id: asked.request_id, kind: "ask_user".into(), grant_id: None }
                }
                Err(e) => HarnessCall::Done(Err(e)),
            },
            Err(e) => HarnessCall::Done(Err(e)),
        };
    }
    let tools = SessionTools { agent };
    let result = tools.run(name, args).await.unwrap_or_else(|| Err(ToolError::unknown(format!("no tool `{name}`"))));
    if let Ok(v) = &result {
        if v["status"] == "pending" {
            let grant_id = v["grantId"].as_str().unwrap_or_default().to_owned();
            let grant = crate::store::requests::get_grant(tools.agent.cx.db(), &grant_id).await.ok().flatten();
            if let Some(request_id) = grant.and_then(|g| g.request_id) {
                return HarnessCall::Awaiting { request_id, kind: "access".into(), grant_id: Some(grant_id) };
            }
        }
    }
    HarnessCall::Done(result)
}

/// The result of a tool the harness waited on, once its request was answered or the wait ran out.
pub async fn harness_resume(
    agent: CallingSession<'_>,
    kind: &str,
    request_id: &str,
    grant_id: Option<&str>,
) -> ToolResult {
    let agent = CallingSession { wait_ms: 0, ..agent };
    let result = match (kind, grant_id) {
        ("access", Some(g)) => access::grant_status(&agent, g).await,
        _ => asking::answer_of(&agent, request_id).await,
    };
    result.map_err(|e| e.finish(&agent.cx.request_id))
}

/// Whether a name is one of the session tools.
pub fn is_tool(name: &str) -> bool {
    find(name).is_some()
}

/// The tools in the OpenAI function-calling shape, for harnesses.
pub fn function_specs() -> Vec<Value> {
    TOOLS
        .iter()
        .map(|t| {
            json!({"type": "function", "function": {
                "name": t.name, "description": t.description(), "parameters": t.input_schema()}})
        })
        .collect()
}
