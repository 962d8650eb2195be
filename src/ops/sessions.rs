//! Sessions and turns (contract: "A task, start to finish", "Rate limits and waiting"): start a session
//! with an agent, send messages, read replies by cursor with the wait held in the session's object.

use crate::cx::{Cx, Membership};
use crate::domain::idempotency::{self, Scope, DEFAULT_TTL_MS, START_TTL_MS};
use crate::error::{ApiError, Code};
use crate::rules::ids::{AgentRef, MessageId, SessionId, TaskId};
use crate::rules::params::{words, IdempotencyKey, Int, Text};
use crate::rules::{cursor, ids};
use crate::session::{calls, Author, Event, NewMessage, RunPrice, SessionConfig};
use crate::store::{
    self,
    agents::Agent,
    sessions::{SessionRow, SessionStatus},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// Longest message accepted, in characters.
const MAX_MESSAGE_CHARS: usize = 64_000;
/// Longest wait `read_session` holds, in seconds.
const MAX_WAIT_SECONDS: i64 = 50;
words! {
    /// How much a model reasons before it answers.
    pub enum Thinking { Off = "off", Low = "low", Medium = "medium", High = "high" }
}
/// A model's name, as a session or agent is given it.
pub type Model = Text<1, 100>;
/// A message to a session (1–64,000 characters).
pub type Message = Text<1, MAX_MESSAGE_CHARS>;
/// A new session's thinking level: off, because models that do not reason refuse the setting.
pub const DEFAULT_THINKING: &str = "off";

pub use crate::domain::sessions::{call, load};

/// Finds an agent by id or `@handle` that the caller may start in workspace `w`: its own, or public.
pub async fn resolve_agent(cx: &Cx<'_>, w: &Membership, agent: &str) -> Result<Agent, ApiError> {
    let found = crate::ops::agents::named(cx, agent).await?;
    found.filter(|a| a.workspace_id == w.workspace_id || a.is_public).ok_or_else(|| {
        ApiError::new(
            Code::NotFound,
            format!("agent `{agent}` not found in `{}` or the public catalog; call list_agents", w.slug),
        )
    })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartSession {
    /// An id from `list_agents` or a catalog `@handle`.
    pub agent_id: AgentRef,
    /// The task, as the first message to the agent.
    pub message: Message,
    /// Your unique key: a retry with it returns the same session.
    pub idempotency_key: IdempotencyKey,
    /// Join this task (its shared folder); then leave out `workspace`.
    pub task_id: Option<TaskId>,
    /// Cap on what this session may spend, in cents.
    pub budget_cents: Option<Int<1, 10_000_000>>,
    /// Run this model instead of the agent's own.
    pub model: Option<Model>,
    /// A workspace slug from `list_workspaces`; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Started {
    pub session: SessionRow,
    /// The id of the first message: pass it to `read_session`.
    pub message_id: String,
    /// The cursor just after that message: pass it to `read_session`.
    pub cursor: String,
}

/// start_session
pub async fn start(cx: &Cx<'_>, p: StartSession) -> Result<Started, ApiError> {
    let args = serde_json::to_value(json!({
        "agent_id": p.agent_id, "message": p.message, "task_id": p.task_id, "budget_cents": p.budget_cents,
        "model": p.model, "workspace": p.workspace,
    }))
    .map_err(ApiError::cause)?;
    let (w, task_id) = match (&p.task_id, &p.workspace) {
        (Some(_), Some(_)) => {
            return Err(ApiError::invalid("pass `task_id` or `workspace`, not both: a task's workspace is its own"))
        }
        (Some(task), None) => {
            let (root, m) = load(cx, task).await.map_err(|e| {
                if e.code == Code::NotFound {
                    ApiError::new(Code::NotFound, format!("task `{task}` not found"))
                } else {
                    e
                }
            })?;
            (m, Some(root.task_id))
        }
        (None, slug) => (cx.workspace(slug.as_deref())?.clone(), None),
    };
    let agent = resolve_agent(cx, &w, &p.agent_id).await?;
    let caller = cx.caller()?;
    let model = p.model.clone().map_or_else(|| agent.model.clone(), String::from);
    let spec = Spec {
        workspace_id: &w.workspace_id,
        agent: &agent,
        task_id: task_id.as_deref(),
        relation: if task_id.is_some() { "helper" } else { "root" },
        parent_session_id: None,
        title: None,
        message: &p.message,
        from: Author::User,
        budget_cents: p.budget_cents.map(Int::get),
        model: &model,
        thinking: DEFAULT_THINKING,
        key_id: Some(&caller.key_id),
    };
    let scope =
        Scope { workspace_id: &w.workspace_id, tool: "start_session", key: &p.idempotency_key, ttl_ms: START_TTL_MS };
    idempotency::once(cx, scope, &args, StartIds::fresh, |ids: StartIds| create(cx, &spec, ids)).await
}

/// Everything a new session needs, whoever starts it: a caller, a hand-off, a routine.
pub struct Spec<'a> {
    pub workspace_id: &'a str,
    pub agent: &'a Agent,
    /// The task to join; `None` starts a new task whose id is the session's.
    pub task_id: Option<&'a str>,
    /// `root`, `helper`, `handoff` or `child`.
    pub relation: &'a str,
    pub parent_session_id: Option<&'a str>,
    /// What lists show; `None`: the start of `message`.
    pub title: Option<String>,
    pub message: &'a str,
    pub from: Author,
    pub budget_cents: Option<i64>,
    pub model: &'a str,
    pub thinking: &'a str,
    pub key_id: Option<&'a str>,
}

/// The ids a start reserves before doing anything, so a retried start reuses them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StartIds {
    pub session_id: String,
    pub message_id: String,
}

impl StartIds {
    /// New random ids (not a `Default`: each call differs).
    pub fn fresh() -> Self {
        Self { session_id: ids::new_id("ses"), message_id: ids::new_id("msg") }
    }
}

/// Creates a session: indexes it (and its task), then starts its object with the first message. Both
/// steps are idempotent on the reserved ids, so running it again after a crash finishes the same start.
/// The object admits the first turn (budgets, the wallet) and takes a paid public agent's price; when it
/// refuses, the index forgets the session again.
pub async fn create(cx: &Cx<'_>, spec: &Spec<'_>, ids: StartIds) -> Result<Started, ApiError> {
    let task = spec.task_id.map_or_else(|| ids.session_id.clone(), str::to_owned);
    let title = spec.title.clone().unwrap_or_else(|| spec.message.chars().take(120).collect());
    let agent = spec.agent;
    store::sessions::insert(
        cx.db(),
        &store::sessions::NewSession {
            session_id: &ids.session_id,
            workspace_id: spec.workspace_id,
            task_id: &task,
            agent_id: &agent.agent_id,
            agent_name: &agent.name,
            harness: &agent.harness,
            model: spec.model,
            thinking: spec.thinking,
            title: &title,
            budget_cents: spec.budget_cents,
            message_id: &ids.message_id,
            key_id: spec.key_id,
            relation: spec.relation,
            parent_session_id: spec.parent_session_id,
            now_ms: cx.now_ms,
        },
    )
    .await?;
    let config = SessionConfig {
        session_id: ids.session_id.clone(),
        workspace_id: spec.workspace_id.to_owned(),
        task_id: task,
        agent_id: agent.agent_id.clone(),
        harness: agent.harness.clone(),
        model: spec.model.to_owned(),
        thinking: spec.thinking.to_owned(),
        instructions: agent.instructions.clone(),
        mcp_servers: agent.mcp_servers.clone(),
        agent_workspace_id: Some(agent.workspace_id.clone()),
        budget_cents: spec.budget_cents,
        started_by_key_id: spec.key_id.map(str::to_owned),
        // Another workspace's public agent costs its price per run; one's own agents are free to start.
        run_price: (agent.workspace_id != spec.workspace_id && agent.price_cents_per_run > 0)
            .then(|| RunPrice { cents: agent.price_cents_per_run, payee_workspace_id: agent.workspace_id.clone() }),
        placement: crate::rules::placement::Placement::of_word(&agent.placement),
        command: agent.command.clone(),
        egress: agent.egress.clone(),
    };
    let message =
        NewMessage { message_id: ids.message_id.clone(), text: spec.message.to_owned(), from: spec.from.clone() };
    let init = calls::Init { config: Box::new(config), message };
    let seq = match call(cx, &ids.session_id, init).await {
        Ok(accepted) => accepted.seq,
        Err(e) if e.code == Code::InsufficientCredits => {
            store::sessions::discard(cx.db(), &ids.session_id, &agent.agent_id).await?;
            return Err(e);
        }
        Err(e) => return Err(e),
    };
    let session = store::sessions::get(cx.db(), &ids.session_id)
        .await?
        .ok_or_else(|| ApiError::cause("session vanished after its start"))?;
    Ok(Started { session, message_id: ids.message_id, cursor: cursor::event(seq) })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendMessage {
    /// The session.
    pub session_id: SessionId,
    /// The next message.
    pub message: Message,
    /// A new unique key for this message; retry with the same key after a timeout.
    pub idempotency_key: IdempotencyKey,
    /// Ignored: the workspace is the session's.
    pub workspace: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Sent {
    pub session_id: String,
    /// Pass to `read_session` to read this message's replies.
    pub message_id: String,
    /// The cursor just after this message.
    pub cursor: String,
}

/// send_message
pub async fn send(cx: &Cx<'_>, p: SendMessage) -> Result<Sent, ApiError> {
    let (_, w) = load(cx, &p.session_id).await?;
    let args = json!({ "session_id": p.session_id, "message": p.message });
    let scope =
        Scope { workspace_id: &w.workspace_id, tool: "send_message", key: &p.idempotency_key, ttl_ms: DEFAULT_TTL_MS };
    idempotency::once(
        cx,
        scope,
        &args,
        || ids::new_id("msg"),
        |message_id: String| {
            let message =
                NewMessage { message_id: message_id.clone(), text: p.message.to_string(), from: Author::User };
            let session_id = p.session_id.as_str().to_owned();
            async move {
                let seq = call(cx, &session_id, calls::Send { message }).await?.seq;
                Ok(Sent { session_id, message_id, cursor: cursor::event(seq) })
            }
        },
    )
    .await
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadSession {
    /// The session.
    pub session_id: SessionId,
    /// The last `cursor` you got, unchanged (default: the start).
    pub cursor: Option<String>,
    /// Only this message's replies.
    pub message_id: Option<MessageId>,
    /// Wait when nothing is new: with `message_id` until its turn ends, else for the next event.
    pub wait_seconds: Option<Int<0, MAX_WAIT_SECONDS>>,
    /// Most events to return (default 200).
    pub limit: Option<Int<1, 200>>,
    /// Ignored: the workspace is the session's.
    pub workspace: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SessionPage {
    /// Events after the cursor, oldest first. Each has `cursor`, `type` (`user_message`,
    /// `agent_message`, `tool_call`, `tool_result`, `status`, `error`, `turn_end`), `message_id`,
    /// `at_ms` and its own fields (`text`, `name`, `reason`, …).
    pub events: Vec<Map<String, Value>>,
    /// Pass to the next `read_session`.
    pub cursor: String,
    /// More events are ready: read again at once, without waiting.
    pub has_more: bool,
    /// The turn of `message_id` has ended and you have read all of it.
    pub turn_finished: bool,
    pub status: SessionStatus,
    /// A turn is running now: more events will come without anyone sending a message.
    pub turn_running: bool,
}

/// An event as clients see it: its fields flattened beside its type and cursor.
pub fn event_json(e: &Event) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("cursor".into(), json!(cursor::event(e.seq)));
    m.insert("type".into(), json!(e.kind));
    m.insert("message_id".into(), json!(e.message_id));
    m.insert("at_ms".into(), json!(e.at_ms));
    if let Value::Object(body) = &e.body {
        for (k, v) in body {
            m.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    m
}

/// read_session
pub async fn read(cx: &Cx<'_>, p: ReadSession) -> Result<SessionPage, ApiError> {
    let after = cursor::parse_event(p.cursor.as_deref())?;
    let wait = p.wait_seconds.map_or(0, Int::get);
    let limit = p.limit.map_or(crate::session::MAX_PAGE as i64, Int::get);
    page_after(cx, &p.session_id, after, p.message_id.as_deref(), limit as u32, wait * 1000).await
}

/// A `read_session` followed as it happens, for a caller that watches each event land (MCP progress on
/// a stream): from the page `read` answered, it keeps waiting in the session's object for the next event
/// and hands each to `seen`, until the read is over: the turn of `message_id` has ended (without one: the
/// running turn, once something came), the session ended, the page is full or has more, the
/// `wait_seconds` are used up, or `seen` says no one is listening. Answers every event it saw as one page.
/// Costs one request, like the read it follows; each wake re-checks the caller may read the session.
pub async fn follow(
    cx: &Cx<'_>,
    args: &Value,
    first: SessionPage,
    seen: &mut dyn FnMut(&Map<String, Value>) -> bool,
) -> Result<SessionPage, ApiError> {
    let p: ReadSession = serde_json::from_value(args.clone()).map_err(|e| ApiError::invalid(e.to_string()))?;
    let deadline = cx.now_ms + p.wait_seconds.map_or(0, Int::get) * 1000;
    let limit = p.limit.map_or(crate::session::MAX_PAGE as i64, Int::get) as usize;
    let mut listening = first.events.iter().all(&mut *seen);
    let mut page = first;
    loop {
        let remaining = deadline - cx.env.clock.now_ms();
        let turn_over = page.turn_finished && (p.message_id.is_some() || !page.events.is_empty());
        let over = page.has_more || page.status == SessionStatus::Terminated || turn_over || page.events.len() >= limit;
        if over || remaining <= 0 || !listening {
            return Ok(page);
        }
        let after = cursor::parse_event(Some(&page.cursor))?;
        let room = (limit - page.events.len()) as u32;
        let next = page_after(cx, &p.session_id, after, p.message_id.as_deref(), room, remaining).await?;
        // The object answers nothing new only when the wait ran out.
        let ran_out = next.events.is_empty();
        listening = next.events.iter().all(&mut *seen) && !ran_out;
        page.events.extend(next.events);
        page = SessionPage { events: page.events, ..next };
    }
}

/// One page after `after`, waiting up to `wait_ms` in the session's object for something to arrive.
async fn page_after(
    cx: &Cx<'_>,
    session_id: &str,
    after: i64,
    message_id: Option<&str>,
    limit: u32,
    wait_ms: i64,
) -> Result<SessionPage, ApiError> {
    load(cx, session_id).await?;
    let read = calls::Read { after, message_id: message_id.map(str::to_owned), limit, wait_ms };
    let page = call(cx, session_id, read).await?;
    Ok(SessionPage {
        events: page.events.iter().map(event_json).collect(),
        cursor: cursor::event(page.last_seq),
        has_more: page.has_more,
        turn_finished: page.turn_finished,
        turn_running: page.status == SessionStatus::Running,
        status: page.status,
    })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetSession {
    /// The session.
    pub session_id: SessionId,
    /// Ignored: the workspace is the session's.
    pub workspace: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SessionInfo {
    #[serde(flatten)]
    pub session: SessionRow,
    /// The workspace's slug.
    pub workspace: String,
    /// Its hosted sandbox, if it ever started one: its state, boot time, running time and cost, what it may
    /// reach, and its newest boots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "crate::domain::sandboxes::SandboxView")]
    pub sandbox: Option<crate::domain::sandboxes::SandboxView>,
}

/// get_session
pub async fn get(cx: &Cx<'_>, p: GetSession) -> Result<SessionInfo, ApiError> {
    let (session, w) = load(cx, &p.session_id).await?;
    // Only agents whose turns run on a runner have sandboxes.
    let sandbox = match crate::rules::harness::Harness::word_on_runner(&session.harness) {
        true => crate::domain::sandboxes::view(cx.db(), &session.session_id, cx.now_ms).await?,
        false => None,
    };
    Ok(SessionInfo { session, workspace: w.slug, sandbox })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListSessions {
    /// Only this agent's sessions.
    pub agent_id: Option<AgentRef>,
    /// Page size (default 20).
    pub limit: Option<Int<1, 100>>,
    /// `next_cursor` from the previous page.
    pub cursor: Option<String>,
    /// A workspace slug from `list_workspaces`; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SessionList {
    /// Newest first.
    pub sessions: Vec<SessionRow>,
    /// Pass as `cursor` for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// list_sessions
pub async fn list(cx: &Cx<'_>, p: ListSessions) -> Result<SessionList, ApiError> {
    let w = cx.workspace(p.workspace.as_deref())?;
    let limit = p.limit.map_or(20, Int::get);
    let before = cursor::parse_keyset(p.cursor.as_deref())?;
    // An id filters as given (a deleted agent's sessions stay listed); a handle names an agent this
    // workspace can start.
    let agent_id = match p.agent_id {
        Some(handle) if handle.starts_with('@') => Some(resolve_agent(cx, w, &handle).await?.agent_id),
        other => other.map(|id| id.as_str().to_owned()),
    };
    let mut sessions = store::sessions::list(cx.db(), &w.workspace_id, agent_id.as_deref(), before, limit + 1).await?;
    let next_cursor = (sessions.len() as i64 > limit).then(|| {
        sessions.truncate(limit as usize);
        let last = sessions.last().expect("a full page has a last row");
        cursor::keyset(last.created_ms, &last.session_id)
    });
    Ok(SessionList { sessions, next_cursor })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StopSession {
    /// The session.
    pub session_id: SessionId,
    /// Ignored: the workspace is the session's.
    pub workspace: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Stopped {
    pub session_id: String,
    /// Always `terminated`: the transcript, files and artifacts stay.
    pub status: SessionStatus,
}

/// stop_session
pub async fn stop(cx: &Cx<'_>, p: StopSession) -> Result<Stopped, ApiError> {
    let (row, _) = load(cx, &p.session_id).await?;
    match call(cx, &row.session_id, calls::Stop {}).await {
        Ok(_) => {}
        // Indexed but never started (its start failed half-way): only the index knows it.
        Err(e) if e.code == Code::NotFound => {}
        Err(e) => return Err(e),
    }
    cx.db()
        .all(store::sessions::mark(&row.session_id, SessionStatus::Terminated, row.spent_cents, None, cx.now_ms))
        .await?;
    // Its agent waits on no one any more: its waiting calls end now, and a late answer is refused.
    crate::domain::requests::close_session(cx, &row.session_id).await?;
    stop_sandbox(cx, &row.session_id).await?;
    Ok(Stopped { session_id: row.session_id, status: SessionStatus::Terminated })
}

/// A hosted session's sandbox stops with it, and its runner's token stops working.
async fn stop_sandbox(cx: &Cx<'_>, session_id: &str) -> Result<(), ApiError> {
    let Some(runner) = store::runners::hosted_runner(cx.db(), session_id).await? else { return Ok(()) };
    if let Err(e) = cx.env.sandboxes.stop(session_id).await {
        crate::error::log_line(&format!("session {session_id}: its sandbox did not stop: {e}"));
    }
    let stopped = crate::store::sandboxes::Ended::Stopped;
    crate::domain::sandboxes::settle(cx.env, Some(session_id), stopped, cx.now_ms).await.map_err(ApiError::cause)?;
    store::runners::revoke(cx.db(), &runner.workspace_id, &runner.runner_id).await?;
    Ok(())
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelTurn {
    /// The session.
    pub session_id: SessionId,
    /// Only this message's turn (`msg_…`): a repeat after it was cancelled answers the same, and a turn
    /// that ended otherwise is refused. Left out, whatever turn is running.
    pub message_id: Option<MessageId>,
    /// Ignored: the workspace is the session's.
    pub workspace: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TurnCancelled {
    pub session_id: String,
    /// The message whose turn ended `cancelled`.
    pub message_id: String,
    /// The session's status now: `idle`, ready for the next message.
    pub status: SessionStatus,
    /// An earlier cancel had ended this turn already.
    pub replayed: bool,
}

/// cancel_turn
pub async fn cancel_turn(cx: &Cx<'_>, p: CancelTurn) -> Result<TurnCancelled, ApiError> {
    let (row, _) = load(cx, &p.session_id).await?;
    // The object ends the turn `cancelled` and goes idle ([`crate::session::Core::cancel_turn`]); then a
    // runner holding it is told through its lease, the agent's open requests are withdrawn, and
    // `turn.finished` says so. Telling the runner is safe to repeat, so a retried cancel finishes that; the
    // withdrawals and `turn.finished` come only from the cancel that ended the turn (a replay is not that
    // turn any more).
    let ask = calls::CancelTurn { message_id: p.message_id.as_ref().map(|m| m.as_str().to_owned()) };
    let crate::session::TurnCancelled { message_id, replayed, status } = call(cx, &row.session_id, ask).await?;
    if let Some(lease) = store::runners::cancel(cx.db(), &row.session_id, &message_id).await? {
        // The agent's session token goes with its turn; a job poll waiting on the lease wakes to hear it.
        store::requests::revoke_runner_tokens(cx.db(), &row.session_id, None).await?;
        if let Some(lease) = lease {
            crate::domain::jobs::signal(cx, &row.session_id, crate::domain::jobs::poll_key(&lease)).await?;
        }
    }
    if !replayed {
        // Only a cancel that ended the turn withdraws what its agent waits on: a replay may come after the
        // session moved on, and the open requests then are the next turn's.
        for open in store::requests::open_for_session(cx.db(), &row.session_id, cx.now_ms).await? {
            crate::domain::requests::end(
                cx,
                &open,
                store::requests::RequestStatus::Withdrawn,
                "its turn was cancelled",
            )
            .await?;
        }
        let data = serde_json::json!({ "session_id": row.session_id, "task_id": row.task_id,
            "agent_id": row.agent_id, "message_id": message_id, "reason": "cancelled",
            "spent_cents": row.spent_cents, "error": null });
        let source = format!("{}/{message_id}", row.session_id);
        crate::domain::webhooks::emit(cx.env, &row.workspace_id, "turn.finished", Some(&source), data, cx.now_ms).await;
    }
    Ok(TurnCancelled { session_id: row.session_id, message_id, status, replayed })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CollectResult {
    /// The session.
    pub session_id: SessionId,
    /// Ignored: the workspace is the session's.
    pub workspace: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CollectedResult {
    pub session_id: String,
    /// The task the session works in: its shared folder holds the files.
    pub task_id: String,
    pub status: SessionStatus,
    /// The agent's last reply, if it has replied.
    pub last_reply: Option<String>,
    /// The task files this session wrote, each at the newest version it wrote.
    pub files: Vec<store::files::FileInfo>,
    pub spent_cents: i64,
}

/// collect_result
pub async fn collect(cx: &Cx<'_>, p: CollectResult) -> Result<CollectedResult, ApiError> {
    let (row, _) = load(cx, &p.session_id).await?;
    let summary = call(cx, &row.session_id, calls::Summary {}).await?;
    let files = store::files::written_by(cx.db(), &row.session_id).await?;
    Ok(CollectedResult {
        session_id: row.session_id,
        task_id: row.task_id,
        status: summary.status,
        last_reply: summary.last_reply,
        files,
        spent_cents: summary.spent_cents,
    })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SwitchModel {
    /// The session.
    pub session_id: SessionId,
    /// The model its next turns use.
    pub model: Option<Model>,
    /// The thinking level its next turns use: `off`, `low`, `medium` or `high`.
    pub thinking: Option<Thinking>,
    /// Ignored: the workspace is the session's.
    pub workspace: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ModelSwitched {
    pub session_id: String,
    pub model: String,
    pub thinking: String,
}

/// switch_model
pub async fn switch_model(cx: &Cx<'_>, p: SwitchModel) -> Result<ModelSwitched, ApiError> {
    if p.model.is_none() && p.thinking.is_none() {
        return Err(ApiError::invalid("pass `model`, `thinking` or both"));
    }
    let (row, _) = load(cx, &p.session_id).await?;
    if row.status == SessionStatus::Terminated {
        return Err(ApiError::new(Code::SessionTerminated, "this session is stopped"));
    }
    let configure =
        calls::Configure { model: p.model.map(String::from), thinking: p.thinking.map(|t| t.as_str().to_owned()) };
    let config = call(cx, &row.session_id, configure).await?;
    store::sessions::set_model(cx.db(), &row.session_id, &config.model, &config.thinking, cx.now_ms).await?;
    Ok(ModelSwitched { session_id: row.session_id, model: config.model, thinking: config.thinking })
}
