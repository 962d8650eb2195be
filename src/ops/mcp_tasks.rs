//! MCP tasks for the operator's tools: `start_session`, `send_message`, `hand_off_session` and
//! `run_routine` (the rows with `task: true`) answered with a task handle that follows the turn they
//! started, so a long turn never hits a client's tool timeout.
//!
//! The call itself runs as usual (scope, rate limit, idempotency); then the task is written to D1, keyed to
//! the calling key, before the handle is answered. Nothing runs in the background for it: each `tasks/get`
//! reads the turn on from the session's object where the last one stopped (the row keeps the position, so
//! a turn of any length is followed to its end a few pages per poll), and the first read that sees the
//! turn's end writes the outcome, so later reads (and `tasks/list`) are plain rows. The outcome is what a
//! `read_session` loop would give: the agent's final reply, the cursor after the turn and the files the
//! session wrote, beside the tool's own result. While the agent waits on a person (`ask_user`,
//! `request_access`), the task is `input_required` on the 2026 wire (its `inputRequests` elicit the
//! answer, `tasks/update` gives it); the 2025 wire has no stateless way to ask, so there it stays `working`
//! and its status message says how to answer. `tasks/cancel` cancels the turn (as `cancel_turn` does): the
//! session stays, idle, and takes the next message.

use super::requests::AnswerRequest;
use super::sessions::CancelTurn;
use crate::cx::Cx;
use crate::domain::sessions::{call, load};
use crate::error::{ApiError, Code};
use crate::mcp::{Era, RpcError, TaskAnswer, TaskInfo};
use crate::rules::params::param;
use crate::rules::{cursor, ids};
use crate::session::calls;
use crate::store::mcp_tasks::{McpTaskRow, ReadProgress, TaskStatus};
use crate::store::{self, requests::RequestRow};
use serde_json::{json, Map, Value};

/// How often clients are asked to poll: a turn takes seconds to minutes.
pub const POLL_INTERVAL_MS: i64 = 2_000;
/// How long a task is kept when the client names no time, and the bounds of what it may name.
pub const DEFAULT_TTL_MS: i64 = 24 * 3_600_000;
pub const MIN_TTL_MS: i64 = 60_000;
pub const MAX_TTL_MS: i64 = 7 * 24 * 3_600_000;
/// Pages of 200 events one poll reads at most (each is a call to the session's object); the next poll
/// reads on from there.
const MAX_PAGES: usize = 10;
/// Longest `tasks/result` waits for the turn to end before answering that it is still running.
const RESULT_WAIT_MS: i64 = 45_000;
/// A cancelled task's status message.
const CANCELLED: &str = "cancelled: its turn was cancelled; the session is idle and takes the next message";
/// `tasks/list` page size.
const LIST_PAGE: i64 = 50;

/// The turn a task-capable tool's result started: its session, message and the cursor before its replies.
fn turn_of(tool: &str, result: &Value) -> Option<(String, String, Option<String>)> {
    let started = match tool {
        "start_session" => result.clone(),
        "hand_off_session" => result.get("target_session")?.clone(),
        "send_message" | "run_routine" => {
            let session_id = result.get("session_id")?.as_str()?;
            json!({"session": {"session_id": session_id}, "message_id": result.get("message_id"), "cursor": result.get("cursor")})
        }
        _ => return None,
    };
    let session_id = started.get("session")?.get("session_id")?.as_str()?.to_owned();
    let message_id = started.get("message_id")?.as_str()?.to_owned();
    let cursor = started.get("cursor").and_then(Value::as_str).map(str::to_owned);
    Some((session_id, message_id, cursor))
}

/// The most tasks one key has at once (until they expire); a call past it is answered without a task.
pub const LIVE_PER_KEY: i64 = 100;

/// Records the task for a call that has run; `None` when its result started no turn to follow, or the
/// key has [`LIVE_PER_KEY`] tasks already (the caller then answers the result itself).
pub async fn create(
    cx: &Cx<'_>,
    tool: &str,
    result: &Value,
    ttl_ms: Option<u64>,
) -> Result<Option<TaskInfo>, ApiError> {
    let Some((session_id, message_id, cursor)) = turn_of(tool, result) else {
        return Ok(None);
    };
    let caller = cx.caller()?;
    let (session, _) = load(cx, &session_id).await?;
    let ttl_ms =
        ttl_ms.map_or(DEFAULT_TTL_MS, |t| i64::try_from(t).unwrap_or(MAX_TTL_MS)).clamp(MIN_TTL_MS, MAX_TTL_MS);
    let row = McpTaskRow {
        task_id: ids::new_id("mtk"),
        workspace_id: session.workspace_id,
        key_id: caller.key_id.clone(),
        tool: tool.to_owned(),
        call_result: result.to_string(),
        session_id,
        message_id,
        cursor,
        status: TaskStatus::Working,
        status_message: Some(format!("{tool} ran; following the agent's turn")),
        outcome: None,
        ttl_ms,
        created_ms: cx.now_ms,
        updated_ms: cx.now_ms,
        expires_ms: cx.now_ms + ttl_ms,
        read_seq: None,
        read_reply: None,
        read_events: 0,
    };
    // Past the cap the call is answered as if no task was asked for: it has run already.
    if !store::mcp_tasks::insert(cx.db(), &row, LIVE_PER_KEY).await? {
        return Ok(None);
    }
    Ok(Some(info(&row)))
}

/// Answers one task method for the calling key.
pub async fn answer(cx: &Cx<'_>, era: Era, method: crate::mcp::TaskMethod<'_>) -> Result<TaskAnswer, TaskError> {
    use crate::mcp::TaskMethod as M;
    match method {
        M::Get(id) => Ok(TaskAnswer::One(follow(cx, era, find(cx, id).await?, 0).await?)),
        M::Result(id) => Ok(TaskAnswer::One(follow(cx, era, find(cx, id).await?, RESULT_WAIT_MS).await?)),
        M::Cancel(id) => Ok(TaskAnswer::One(cancel(cx, era, find(cx, id).await?).await?)),
        M::List(after) => list(cx, after).await,
        M::Update(id, responses) => {
            update(cx, find(cx, id).await?, responses).await?;
            Ok(TaskAnswer::Ack)
        }
    }
}

/// Why a task method failed: a protocol error the client should see as is, or an API failure.
#[derive(Debug)]
pub enum TaskError {
    Rpc(RpcError),
    Api(ApiError),
}

impl From<ApiError> for TaskError {
    fn from(e: ApiError) -> Self {
        TaskError::Api(e)
    }
}

impl From<store::DbError> for TaskError {
    fn from(e: store::DbError) -> Self {
        TaskError::Api(e.into())
    }
}

fn unknown(task_id: &str) -> TaskError {
    TaskError::Rpc(RpcError::invalid_params(format!(
        "Invalid params: task {} not found",
        crate::rules::params::quoted(task_id)
    )))
}

/// The calling key's task. Another key's, an expired one, or one whose workspace the caller has left is
/// not found, in the same words.
async fn find(cx: &Cx<'_>, task_id: &str) -> Result<McpTaskRow, TaskError> {
    let caller = cx.caller()?;
    let row =
        store::mcp_tasks::get(cx.db(), &caller.key_id, task_id, cx.now_ms).await?.ok_or_else(|| unknown(task_id))?;
    if cx.member_of(&row.workspace_id, "task").is_err() {
        return Err(unknown(task_id));
    }
    Ok(row)
}

/// Where the task stands now: a terminal row as it is; otherwise the turn read from the session (after
/// waiting up to `wait_ms` for it to end), and the row moved on when its status changed.
async fn follow(cx: &Cx<'_>, era: Era, row: McpTaskRow, wait_ms: i64) -> Result<TaskInfo, TaskError> {
    if row.status.is_terminal() {
        return Ok(shown(era, &row));
    }
    let turn = match read_turn(cx, &row, wait_ms).await {
        Ok(turn) => turn,
        // The session is gone (its workspace's data purged): the task cannot end well any more.
        Err(e) if e.code == Code::NotFound => {
            // −32603, JSON-RPC's internal error: the task's work cannot go on.
            let error = json!({"code": -32603, "message": "the task's session no longer exists"});
            let failed = store::mcp_tasks::set_status(
                cx.db(),
                &row.task_id,
                TaskStatus::Failed,
                Some("the session no longer exists"),
                Some(&error.to_string()),
                cx.now_ms,
            )
            .await?;
            return Ok(shown(era, &failed.ok_or_else(|| unknown(&row.task_id))?));
        }
        Err(e) => return Err(e.into()),
    };
    let mut open = Vec::new();
    let (status, message, outcome) = match &turn.end {
        // Cancelled from elsewhere (`cancel_turn`, the console's Stop turn): the task is cancelled too.
        Some(reason) if reason == "cancelled" => (TaskStatus::Cancelled, CANCELLED.to_owned(), None),
        Some(reason) => {
            let files = store::files::written_by(cx.db(), &row.session_id).await?;
            let outcome = outcome(&row, &turn, reason, &files);
            (TaskStatus::Completed, format!("the turn ended: {reason}"), Some(outcome.to_string()))
        }
        None => {
            open = open_requests(cx, &row.session_id).await?;
            match open.first() {
                Some(r) => (TaskStatus::InputRequired, waiting_on(r), None),
                None => {
                    (TaskStatus::Working, format!("the agent is working ({} events so far)", turn.read.events), None)
                }
            }
        }
    };
    let changed = status != row.status
        || row.status_message.as_deref() != Some(message.as_str())
        || row.read_events != turn.read.events;
    let row = if changed {
        let db = cx.db();
        store::mcp_tasks::advance(db, &row.task_id, &turn.read, status, Some(&message), outcome.as_deref(), cx.now_ms)
            .await?
            .ok_or_else(|| unknown(&row.task_id))?
    } else {
        row
    };
    let mut task = shown(era, &row);
    if task.status == TaskStatus::InputRequired {
        task.input_requests = Some(input_requests(&open));
    }
    Ok(task)
}

/// A row as `era` shows it. On the 2025 wire `input_required` tells a client to call `tasks/result` and
/// take the server's requests from its stream, which a stateless server cannot send: there the task stays
/// `working`, and its status message says what the agent waits on and how to answer it.
fn shown(era: Era, row: &McpTaskRow) -> TaskInfo {
    let mut task = info(row);
    if era == Era::Legacy && task.status == TaskStatus::InputRequired {
        task.status = TaskStatus::Working;
    }
    task
}

/// What the reads of the turn found, this poll's and the earlier ones'.
struct Turn {
    /// The turn's end reason (`completed`, `stopped`, `failed`, `budget_reached`, …) once it has ended.
    end: Option<String>,
    /// The last event read, the agent's last message in the turn so far and how many events were read.
    read: ReadProgress,
}

/// Reads the turn of the task's message on from where the last poll stopped (from its start the first
/// time), page by page, as a `read_session` loop would.
async fn read_turn(cx: &Cx<'_>, row: &McpTaskRow, wait_ms: i64) -> Result<Turn, ApiError> {
    load(cx, &row.session_id).await?;
    let seq = match row.read_seq {
        Some(seq) => seq,
        None => cursor::parse_event(row.cursor.as_deref())?,
    };
    let read = ReadProgress { seq, reply: row.read_reply.clone(), events: row.read_events };
    let mut turn = Turn { end: None, read };
    for page_no in 0..MAX_PAGES {
        let wait = if page_no == 0 { wait_ms } else { 0 };
        let read =
            calls::Read { after: turn.read.seq, message_id: Some(row.message_id.clone()), limit: 200, wait_ms: wait };
        let page = call(cx, &row.session_id, read).await?;
        for e in &page.events {
            turn.read.events += 1;
            match e.kind.as_str() {
                "agent_message" => turn.read.reply = e.body.get("text").and_then(Value::as_str).map(str::to_owned),
                "turn_end" => {
                    turn.end = Some(e.body.get("reason").and_then(Value::as_str).unwrap_or("completed").to_owned())
                }
                _ => {}
            }
        }
        turn.read.seq = page.last_seq;
        if page.turn_finished && turn.end.is_none() {
            turn.end = Some("completed".into());
        }
        if !page.has_more || turn.end.is_some() {
            break;
        }
    }
    Ok(turn)
}

/// The task's `CallToolResult`: the tool's own result with `turn` beside it.
fn outcome(row: &McpTaskRow, turn: &Turn, reason: &str, files: &[store::files::FileInfo]) -> Value {
    let mut value: Value = serde_json::from_str(&row.call_result).unwrap_or_else(|_| json!({}));
    value["turn"] = json!({
        "session_id": row.session_id,
        "message_id": row.message_id,
        "end_reason": reason,
        "final_reply": turn.read.reply,
        "cursor": cursor::event(turn.read.seq),
        "files": files,
    });
    let mut result = crate::mcp::results::success(value);
    // A turn that did not finish its work (stopped, failed, out of budget or credit) is a tool error, not
    // a protocol one: the task is `completed` with `isError`.
    result["isError"] = json!(reason != "completed");
    result
}

async fn open_requests(cx: &Cx<'_>, session_id: &str) -> Result<Vec<RequestRow>, ApiError> {
    Ok(store::requests::open_for_session(cx.db(), session_id, cx.now_ms).await?)
}

/// What the task waits on, in words that say how to answer it.
fn waiting_on(r: &RequestRow) -> String {
    let asked = r.payload.get("prompt").or_else(|| r.payload.get("summary")).or_else(|| r.payload.get("reason"));
    let asked = asked.and_then(Value::as_str).map_or(String::new(), |a| format!(": {a}"));
    format!(
        "the agent waits on a {} request{asked} (answer it with answer_request, task_id {:?}, request_id {:?})",
        r.kind, r.task_id, r.request_id
    )
}

/// The open requests as 2026-07-28 `inputRequests`: each an elicitation form asking for the one answer
/// `answer_request` takes, keyed by the request's id (unique for the task's life).
fn input_requests(open: &[RequestRow]) -> Map<String, Value> {
    open.iter()
        .map(|r| {
            let answer = match r.kind.as_str() {
                "access" => json!({"type": "string", "enum": ["approve", "deny"], "title": "Allow this access?"}),
                "plan" => json!({"type": "string", "enum": ["approve", "reject"], "title": "Approve this plan?"}),
                "decision" => match r.payload.get("options").and_then(Value::as_array) {
                    Some(options) if !options.is_empty() => {
                        json!({"type": "string", "enum": options, "title": "Your choice"})
                    }
                    _ => json!({"type": "string", "title": "Your choice"}),
                },
                _ => json!({"type": "string", "title": "Your answer"}),
            };
            let request = json!({
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": waiting_on(r),
                    "requestedSchema": {"type": "object", "properties": {"answer": answer}, "required": ["answer"]},
                },
            });
            (r.request_id.clone(), request)
        })
        .collect()
}

/// `tasks/update`: each accepted elicitation answers its request through `answer_request` (with its role
/// and scope checks); keys that are not this task's open requests are ignored, as the extension asks.
async fn update(cx: &Cx<'_>, row: McpTaskRow, responses: &Map<String, Value>) -> Result<(), TaskError> {
    let open = open_requests(cx, &row.session_id).await?;
    for r in open.iter().filter(|r| responses.contains_key(&r.request_id)) {
        let response = &responses[&r.request_id];
        let answer = match response.get("action").and_then(Value::as_str) {
            Some("accept") => response.pointer("/content/answer").and_then(Value::as_str).map(str::to_owned),
            // A declined access request is a denial; anything else declined stays open for a person.
            Some("decline") if r.kind == "access" => Some("deny".to_owned()),
            _ => None,
        };
        let Some(answer) = answer else { continue };
        let answered = async {
            let args = AnswerRequest {
                task_id: param("task_id", &r.task_id)?,
                request_id: param("request_id", &r.request_id)?,
                answer: param("answer", &answer)?,
                note: None,
                always: None,
                expires_in_minutes: None,
                workspace: None,
            };
            super::call::answer_request(cx, args).await
        };
        answered.await.map_err(|e| {
            TaskError::Rpc(RpcError::invalid_params(format!(
                "Invalid params: inputResponses[{}]: {}",
                crate::rules::params::quoted(&r.request_id),
                e.message
            )))
        })?;
    }
    Ok(())
}

/// Cancels the task's turn (what `cancel_turn` does: the session stays, idle for the next message), then
/// records the task `cancelled`. A turn that ended meanwhile leaves the task to end as it did, on the next
/// read. On the 2025 wire a task that has already ended cannot be cancelled (−32602); the extension's
/// cancel is an idempotent acknowledgement.
async fn cancel(cx: &Cx<'_>, era: Era, row: McpTaskRow) -> Result<TaskInfo, TaskError> {
    if row.status.is_terminal() {
        return match era {
            Era::Legacy => Err(TaskError::Rpc(RpcError::invalid_params(format!(
                "Invalid params: task {:?} has already ended ({}); it cannot be cancelled",
                row.task_id, row.status
            )))),
            Era::Modern => Ok(info(&row)),
        };
    }
    let cancelled = async {
        let args = CancelTurn {
            session_id: param("session_id", &row.session_id)?,
            message_id: Some(param("message_id", &row.message_id)?),
            workspace: None,
        };
        super::call::cancel_turn(cx, args).await
    };
    match cancelled.await {
        Ok(_) => {}
        // The turn ended on its own (or the session was stopped) before the cancel: the task ends as the
        // turn did.
        Err(e) if matches!(e.code, Code::Conflict | Code::SessionTerminated) => {
            let task = follow(cx, era, row, 0).await?;
            return match (era, task.status.is_terminal()) {
                (Era::Legacy, true) => Err(TaskError::Rpc(RpcError::invalid_params(format!(
                    "Invalid params: task {:?} has already ended ({}); it cannot be cancelled",
                    task.task_id, task.status
                )))),
                _ => Ok(task),
            };
        }
        Err(e) => return Err(e.into()),
    }
    let row =
        store::mcp_tasks::set_status(cx.db(), &row.task_id, TaskStatus::Cancelled, Some(CANCELLED), None, cx.now_ms)
            .await?
            .ok_or_else(|| unknown(&row.task_id))?;
    Ok(info(&row))
}

/// The key's tasks, newest first, as last seen (each `tasks/get` moves one on).
async fn list(cx: &Cx<'_>, after: Option<&str>) -> Result<TaskAnswer, TaskError> {
    let caller = cx.caller()?;
    let before = cursor::parse_keyset(after).map_err(|_| {
        TaskError::Rpc(RpcError::invalid_params("Invalid params: cursor must be a nextCursor from tasks/list"))
    })?;
    let mut rows = store::mcp_tasks::list(cx.db(), &caller.key_id, before, LIST_PAGE + 1, cx.now_ms).await?;
    let next = (rows.len() as i64 > LIST_PAGE).then(|| {
        rows.truncate(LIST_PAGE as usize);
        let last = rows.last().expect("a full page has a last row");
        cursor::keyset(last.created_ms, &last.task_id)
    });
    let visible =
        rows.iter().filter(|r| cx.member_of(&r.workspace_id, "task").is_ok()).map(|r| shown(Era::Legacy, r)).collect();
    Ok(TaskAnswer::Many(visible, next))
}

/// The cron's sweep: tasks past their time are already invisible; this lets their rows go.
pub async fn forget_expired(cx: &Cx<'_>) -> Result<usize, ApiError> {
    Ok(store::mcp_tasks::forget_expired(cx.db(), cx.now_ms).await?)
}

/// A row as the wire layer shows it.
fn info(row: &McpTaskRow) -> TaskInfo {
    let outcome: Option<Value> = row.outcome.as_deref().and_then(|o| serde_json::from_str(o).ok());
    let (result, error) = match row.status {
        TaskStatus::Completed => (outcome, None),
        TaskStatus::Failed => {
            let error = outcome.unwrap_or_default();
            let message = error.get("message").and_then(Value::as_str).unwrap_or("the task failed");
            (None, Some(RpcError::new(error.get("code").and_then(Value::as_i64).unwrap_or(-32603), message)))
        }
        _ => (None, None),
    };
    TaskInfo {
        task_id: row.task_id.clone(),
        status: row.status,
        status_message: row.status_message.clone(),
        created_ms: row.created_ms,
        updated_ms: row.updated_ms,
        ttl_ms: row.ttl_ms,
        poll_interval_ms: POLL_INTERVAL_MS,
        result,
        error,
        input_requests: None,
    }
}
