//! The runner face (`/v1/runner/*`): how `sky runner` processes run the turns of `runner` agents on their
//! own machines. A runner registers with a workspace key (`POST /v1/runners`, in the operation table) and
//! then speaks this small protocol with its runner token:
//!
//! - `POST /v1/runner/claim {wait_seconds?}` → a turn with a lease (30 s), or 204 when none is waiting;
//! - `POST /v1/runner/heartbeat {lease_id}` → the lease renewed, and `stop: true` once the session was
//!   stopped, or `stop: true, reason: "cancelled"` once only this turn was cancelled (the runner then kills
//!   the agent; the job poll and the event post answer the same);
//! - `POST /v1/runner/events {lease_id, events: [{key, type, …}], done?}` → events reported exactly once by
//!   their keys; `done` (`completed` or `failed`) ends the turn;
//! - `GET /v1/runner/files?lease_id=` and `PUT /v1/runner/files {lease_id, path, content}` → the task folder
//!   as the session sees it (its lane over the base); `DELETE /v1/runner/files?lease_id=&path=` deletes a
//!   file the agent removed (a tombstone in the lane until `land`), `{deleted: false}` when it is gone already;
//! - `GET /v1/runner/skills?lease_id=` → the workspace's company skills, in full ([`skills`]).
//! - A claim may instead answer `{checkout: {job_id, kind: "checks", lease_id, command, timeout_s}}`: a
//!   session's checks, for any runner of the workspace (the session's own runner may be gone). The runner
//!   fetches the lane with `GET /v1/runner/files` under that lease into a fresh folder, runs the command,
//!   heartbeats the lease meanwhile and posts the result to `POST /v1/runner/jobs/result`.
//!
//! - `POST /v1/runner/jobs`, `POST /v1/runner/jobs/result`, `POST /v1/runner/ssh-key` and
//!   `GET /v1/runner/criteria`: what the server asks of the runner during a turn ([`jobs`]).
//! - `POST /v1/runner/credential` and `POST /v1/runner/commands`: provider CLI commands the runner runs
//!   for its turn's shims under a grant, and their exit statuses, the only deploy proof ([`granted`]).
//!
//! Every body above is a type of `agentsky_wire::runner`, which the CLI's runner client sends and reads
//! too: the field names are the protocol's, and a renamed one fails to compile on both sides.
//!
//! A runner that stops renewing loses its lease to the next claim, and the turn or checkout is run again
//! by another; until then its lease, lapsed or not, is still its own ([`store::lease`]).

pub mod granted;
pub mod jobs;
pub mod model_relay;
pub mod skills;

use crate::cx::Cx;
use crate::domain::taskfs::{self, Folder, Writer};
use crate::error::error_response;
use crate::error::{ApiError, Code};
use crate::http::{HttpRequest, HttpResponse};
use crate::rules::{ids, limits, redact};
use crate::session::goal::CommandCheck;
use crate::session::{calls, EventKind, ExternalEvent, TurnEnd, TurnState};
use crate::store::{self, runners::TurnRow};
use agentsky_wire::runner::{self as wire, route, Stopping};
use serde::Serialize;
use serde_json::Value;

pub use crate::domain::jobs::LEASE_MS;
const MAX_CLAIM_WAIT_S: i64 = wire::MAX_WAIT_S;

/// A 200 with one of the protocol's answers.
fn ok(answer: &impl Serialize) -> HttpResponse {
    HttpResponse::json(200, &wire::to_value(answer))
}

fn body<T: serde::de::DeserializeOwned>(req: &HttpRequest) -> Result<T, ApiError> {
    let bytes = if req.body.is_empty() { b"{}".as_slice() } else { &req.body };
    let v: Value =
        serde_json::from_slice(bytes).map_err(|e| ApiError::invalid(format!("the body is not JSON: {e}")))?;
    crate::rules::params::decode(v).map_err(ApiError::invalid)
}

/// Answers one runner request.
pub async fn handle(cx: &Cx<'_>, req: &HttpRequest) -> HttpResponse {
    let token = req
        .header("authorization")
        .and_then(|h| h.split_once(' '))
        .filter(|(s, _)| s.eq_ignore_ascii_case("bearer"))
        .map(|(_, t)| t.trim().to_owned())
        .filter(|t| t.starts_with("srt_"));
    let Some(token) = token else {
        return error_response(&ApiError::new(Code::Unauthorized, "a runner token (srt_…) is required"))
            .with_header("www-authenticate", "Bearer realm=\"agentsky\"");
    };
    let runner = match store::runners::by_token(cx.db(), &ids::hash_secret(&token), cx.now_ms).await {
        Ok(Some(r)) => r,
        Ok(None) => {
            return error_response(&ApiError::new(Code::Unauthorized, "unknown runner token"))
                .with_header("www-authenticate", "Bearer realm=\"agentsky\", error=\"invalid_token\"")
        }
        Err(e) => return error_response(&cx.internal(e)),
    };
    let relayed = req.path.strip_prefix(crate::rules::placement::MODEL_RELAY);
    let result = match (req.method.as_str(), req.path.as_str()) {
        _ if relayed.is_some() => model_relay::relay(cx, &runner, req, relayed.unwrap_or_default()).await,
        ("POST", route::CLAIM) => claim(cx, &runner, req).await,
        ("POST", route::HEARTBEAT) => heartbeat(cx, &runner, req).await,
        ("POST", route::EVENTS) => events(cx, &runner, req).await,
        ("GET", route::FILES) => files(cx, &runner, req).await,
        ("GET", route::SKILLS) => skills::list(cx, &runner, req).await,
        ("PUT", route::FILES) => write_file(cx, &runner, req).await,
        ("DELETE", route::FILES) => delete_file(cx, &runner, req).await,
        ("POST", route::JOBS) => jobs::poll(cx, &runner, req).await,
        ("POST", route::JOB_RESULT) => jobs::result(cx, &runner, req).await,
        ("POST", route::SSH_KEY) => jobs::ssh_key(cx, &runner, req).await,
        ("GET", route::CRITERIA) => jobs::criteria(cx, &runner, req).await,
        ("POST", route::CREDENTIAL) => granted::credential(cx, &runner, req).await,
        ("POST", route::COMMANDS) => granted::report(cx, &runner, req).await,
        _ => Err(ApiError::new(Code::NotFound, format!("no runner route {} {}", req.method, req.path))),
    };
    match result {
        Ok(resp) => resp,
        Err(e) => error_response(&e.finish(&cx.request_id)),
    }
}

async fn claim(cx: &Cx<'_>, runner: &store::runners::RunnerRow, req: &HttpRequest) -> Result<HttpResponse, ApiError> {
    let p: wire::Claim = body(req)?;
    let wait = p.wait_seconds.unwrap_or(0);
    if !(0..=MAX_CLAIM_WAIT_S).contains(&wait) {
        return Err(ApiError::invalid(format!("`wait_seconds` must be between 0 and {MAX_CLAIM_WAIT_S}")));
    }
    let deadline = cx.clock_now() + wait * 1000;
    loop {
        let now = cx.clock_now();
        let lease_id = ids::new_id("lease");
        // Checks waiting for any runner come first: a `land` is waiting on them.
        let checkout = store::checkouts::claim(cx.db(), &runner.claimant(), &lease_id, LEASE_MS, now).await?;
        if let Some(c) = checkout {
            return Ok(ok(&checkout_view(&c)));
        }
        let turn = store::runners::claim(cx.db(), &runner.claimant(), &lease_id, LEASE_MS, now).await?;
        if let Some(turn) = turn {
            // `None`: cancelled while it was being put together; the next turn may be claimable.
            if let Some(a) = assignment(cx, turn, runner).await? {
                return Ok(ok(&wire::Claimed::Turn(Box::new(a))));
            }
            continue;
        }
        if now >= deadline {
            return Ok(HttpResponse::new(204));
        }
        // Claims are rare and cheap to retry; a runner waits here instead of hammering the API.
        cx.env.clock.sleep(1_000.min(deadline - now)).await;
    }
}

/// A claimed checkout as the runner sees it: run `command` in a fresh folder holding the files
/// `GET /v1/runner/files` serves for `lease_id`, renew the lease with heartbeats, and post the result
/// (`{exit_code, timed_out, output}`) to `POST /v1/runner/jobs/result`.
fn checkout_view(c: &store::checkouts::CheckoutRow) -> wire::Claimed {
    let spec: wire::JobSpec = serde_json::from_str(&c.spec).unwrap_or_default();
    wire::Claimed::Checkout {
        checkout: wire::Checkout {
            job_id: c.job_id.clone(),
            kind: "checks".into(),
            lease_id: c.lease_id.clone().unwrap_or_default(),
            lease_expires_ms: c.lease_expires_ms,
            session_id: c.session_id.clone(),
            command: spec.command.unwrap_or_default(),
            timeout_s: spec.timeout_s,
        },
    }
}

/// How many pages of 200 events a turn's history may take (100,000 events), so a runaway log cannot
/// hold a claim forever.
const MAX_HISTORY_PAGES: usize = 500;

/// What a runner needs to run a claimed turn; `None` when its lease no longer holds it (a cancel came
/// between the claim and here), so no token for it is handed out.
async fn assignment(
    cx: &Cx<'_>,
    turn: TurnRow,
    runner: &store::runners::RunnerRow,
) -> Result<Option<wire::Assignment>, ApiError> {
    let db = cx.db();
    let session = store::sessions::get(db, &turn.session_id).await?.ok_or_else(|| ApiError::not_found("session"))?;
    let agent = store::agents::get(db, &session.agent_id).await?;
    let mut history = Vec::new();
    let mut message = String::new();
    // The whole history, page after page: a long session's newest message is past the first page.
    let mut after = 0;
    for _ in 0..MAX_HISTORY_PAGES {
        let read = calls::Read { after, message_id: None, limit: 200, wait_ms: 0 };
        let page = crate::domain::sessions::call(cx, &turn.session_id, read).await?;
        for e in &page.events {
            let text = e.body["text"].as_str().unwrap_or_default().to_owned();
            let (role, from_session_id) = match (e.kind.as_str(), e.body["from"].get("peer")) {
                // A peer's message is not the user's: the agent is told who sent it.
                ("user_message", Some(peer)) => (wire::Role::Peer, peer["session_id"].as_str().map(str::to_owned)),
                ("user_message", None) => (wire::Role::User, None),
                ("agent_message", _) => (wire::Role::Agent, None),
                _ => continue,
            };
            if e.kind == "user_message" && e.message_id == turn.message_id {
                // The agent reads the message itself, so it says who sent it, as the hosted harness does.
                message = match &from_session_id {
                    Some(peer) => format!("[a message from peer session {peer}, not from the user]\n{text}"),
                    None => text.clone(),
                };
            }
            history.push(wire::HistoryEntry { from_session_id, role, text });
        }
        if !page.has_more || page.last_seq <= after {
            break;
        }
        after = page.last_seq;
    }
    // The agent inside gets its own session token for the session server, living as long as this lease;
    // a runner that lost the turn loses its agent's token with it.
    let token = ids::new_secret("sst_");
    let lease = turn.lease_id.as_deref();
    store::requests::revoke_runner_tokens(db, &session.session_id, lease).await?;
    let stored = store::requests::insert_token(
        db,
        &ids::hash_secret(&token),
        &session.session_id,
        &session.workspace_id,
        lease,
        cx.now_ms,
    )
    .await?;
    if !stored {
        return Ok(None);
    }
    // A sandbox reaches this deployment at its own origin only.
    let origin = match runner.session_id {
        Some(_) => crate::rules::placement::SANDBOX_ORIGIN,
        None => cx.link_base()?,
    };
    Ok(Some(wire::Assignment {
        lease_id: turn.lease_id.unwrap_or_default(),
        lease_expires_ms: turn.lease_expires_ms,
        attempt: turn.attempts,
        session_id: session.session_id,
        task_id: session.task_id,
        message_id: turn.message_id,
        message,
        history,
        // The session's harness, model and thinking: a session keeps what it started with, and
        // `switch_model` changes its model and thinking, not the agent's.
        agent: agent.map(|a| wire::AgentView {
            agent_id: a.agent_id,
            name: Some(a.name),
            harness: Some(session.harness),
            model: session.model,
            thinking: session.thinking,
            instructions: a.instructions,
            tool_approval: Some(a.tool_approval),
            command: a.command,
        }),
        session_token: token,
        session_server: format!("{origin}/v1/session/mcp"),
        help_server: Some(format!("{origin}/v1/help/mcp")),
    }))
}

/// The turn a runner's lease holds (lapsed or not, while nobody took it over); a lost lease is a conflict
/// the runner must stop on.
async fn leased(cx: &Cx<'_>, runner: &store::runners::RunnerRow, lease_id: &str) -> Result<TurnRow, ApiError> {
    if let Some(turn) = store::runners::held(cx.db(), &runner.runner_id, lease_id).await? {
        return Ok(turn);
    }
    if cancelled(cx, runner, lease_id).await? {
        return Err(ApiError::new(Code::Conflict, "this turn was cancelled: end the agent's command"));
    }
    Err(lost())
}

/// Whether the turn this runner held under the lease was cancelled (`cancel_turn`, `tasks/cancel`).
async fn cancelled(cx: &Cx<'_>, runner: &store::runners::RunnerRow, lease_id: &str) -> Result<bool, ApiError> {
    Ok(store::runners::cancelled_under(cx.db(), &runner.runner_id, lease_id).await?)
}

fn lost() -> ApiError {
    ApiError::new(Code::Conflict, "this lease was taken over or has ended: stop, another runner has the work")
}

async fn stopped(cx: &Cx<'_>, session_id: &str) -> Result<bool, ApiError> {
    let s = store::sessions::get(cx.db(), session_id).await?;
    Ok(s.is_none_or(|s| s.status == store::sessions::SessionStatus::Terminated))
}

async fn heartbeat(
    cx: &Cx<'_>,
    runner: &store::runners::RunnerRow,
    req: &HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let p: wire::Heartbeat = body(req)?;
    let until = cx.now_ms + LEASE_MS;
    let answer = |lease_expires_ms, stopping| ok(&wire::HeartbeatAnswer { lease_expires_ms, stopping });
    if store::checkouts::renew(cx.db(), &runner.runner_id, &p.lease_id, until).await? {
        return Ok(answer(until, Stopping::session(false)));
    }
    // Cancelled: stop, and why, so the runner ends the agent's command and tells its turn ended cancelled.
    if cancelled(cx, runner, &p.lease_id).await? {
        return Ok(answer(cx.now_ms, Stopping::cancelled()));
    }
    let turn = leased(cx, runner, &p.lease_id).await?;
    if !store::runners::renew(cx.db(), &runner.runner_id, &p.lease_id, until).await? {
        return Err(lost());
    }
    Ok(answer(until, Stopping::session(stopped(cx, &turn.session_id).await?)))
}

/// Records the turn's reported usage; the session's reported total in cents, for its budget.
async fn record_usage(cx: &Cx<'_>, turn: &TurnRow, u: &wire::Usage) -> Result<i64, ApiError> {
    let cost = match u.cost_usd {
        Some(c) if !(0.0..1_000_000.0).contains(&c) => {
            return Err(ApiError::invalid("`usage.cost_usd` must be a number of dollars from 0 to 1,000,000"))
        }
        c => c,
    };
    let session =
        store::sessions::get(cx.db(), &turn.session_id).await?.ok_or_else(|| ApiError::not_found("session"))?;
    let (input, output) = (u.input_tokens, u.output_tokens);
    let micro_usd = match cost {
        Some(c) => (c * 1_000_000.0).round() as i64,
        None => cx.env.config.prices.micro_usd(&session.model, input, output),
    };
    let entry_id = format!("rep_{}_{}", turn.session_id, turn.message_id);
    let report = store::reported::Report {
        entry_id: &entry_id,
        workspace_id: &session.workspace_id,
        session_id: &session.session_id,
        agent_id: Some(&session.agent_id),
        harness: &session.harness,
        model: &session.model,
        input_tokens: input,
        cached_input_tokens: u.cached_input_tokens.unwrap_or(0),
        output_tokens: output,
        micro_usd,
        estimated: cost.is_none(),
        now_ms: cx.now_ms,
    };
    Ok(store::reported::cents(store::reported::record(cx.db(), &report).await?))
}

fn event(e: wire::Event) -> Result<ExternalEvent, ApiError> {
    limits::text("events[].key", &e.key, 1, 200)?;
    let kind = match e.kind {
        wire::EventType::AgentMessage => EventKind::AgentMessage,
        wire::EventType::ToolCall => EventKind::ToolCall,
        wire::EventType::ToolResult => EventKind::ToolResult,
        wire::EventType::Status => EventKind::Status,
        wire::EventType::Error => EventKind::Error,
    };
    let body = transcript_safe(kind, Value::Object(e.body));
    if body.to_string().len() > 256 * 1024 {
        return Err(ApiError::new(Code::PayloadTooLarge, "an event holds at most 256 KiB"));
    }
    Ok(ExternalEvent { key: e.key, kind, body })
}

/// An event body as the transcript may keep it: a `get_credential` result keeps only its shape (its
/// values masked wherever else they appear), and every text passes the redaction rule.
fn transcript_safe(kind: EventKind, mut body: Value) -> Value {
    let mut credentials = Vec::new();
    if kind == EventKind::ToolResult && body["name"] == "get_credential" {
        let (kept, values) = match body["content"].take() {
            Value::String(text) => {
                let (kept, values) = crate::domain::grants::persisted("get_credential", &text);
                (Value::String(kept), values)
            }
            v @ Value::Object(_) => crate::domain::grants::withheld(&v),
            Value::Null => (Value::Null, vec![]),
            other => (Value::String(redact::MARK.into()), vec![other.to_string()]),
        };
        body["content"] = kept;
        credentials = values;
    }
    crate::session::map_text(&mut body, &|t| redact::redact(&redact::mask(t, &credentials)));
    body
}

async fn events(cx: &Cx<'_>, runner: &store::runners::RunnerRow, req: &HttpRequest) -> Result<HttpResponse, ApiError> {
    let p: wire::PostEvents = body(req)?;
    // A retried final post whose first answer was lost: the turn is already done, and its events were
    // recorded by their keys.
    if p.done.is_some() && store::runners::finished_under(cx.db(), &p.lease_id).await? {
        return Ok(accepted(0, Stopping::session(false)));
    }
    // The turn is over: what the runner still reports of it is dropped.
    if cancelled(cx, runner, &p.lease_id).await? {
        return Ok(accepted(0, Stopping::cancelled()));
    }
    let turn = leased(cx, runner, &p.lease_id).await?;
    let events = p.events.into_iter().map(event).collect::<Result<Vec<_>, _>>()?;
    let end = p.done.map(|d| match d {
        wire::Done::Completed => TurnEnd::Completed,
        wire::Done::Failed => TurnEnd::Failed,
    });
    if p.checks.iter().any(|c| c.command.len() > 2_000 || c.output.len() > 16 * 1024) {
        return Err(ApiError::invalid("a check holds a command of up to 2000 characters and up to 16 KiB of output"));
    }
    let count = events.len();
    let checks = if end.is_some() { p.checks } else { vec![] };
    // Kept as the runner reported them, their output redacted.
    let checks: Vec<CommandCheck> =
        checks.into_iter().map(|c| CommandCheck { output: redact::redact(&c.output), ..c }).collect();
    let reported_cents = match &p.usage {
        Some(u) => Some(record_usage(cx, &turn, u).await?),
        None => None,
    };
    let call = calls::External { message_id: turn.message_id.clone(), events, end, checks, reported_cents };
    match crate::domain::sessions::call(cx, &turn.session_id, call).await {
        // The post itself ended the turn (its reported usage reached the session's budget): the runner
        // stops now, not at its next post.
        Ok(s)
            if end.is_none()
                && (s.turn.state != TurnState::Running || s.turn.message_id != Some(turn.message_id.clone())) =>
        {
            return end_orphaned(cx, runner, &turn, false).await
        }
        Ok(_) => {}
        // The session's turn ended without this row hearing of it (a cancel or stop that failed after the
        // object ended the turn): the row ends now, or the turn would be claimed again each time its lease
        // ran out.
        Err(e) if e.code == Code::Conflict => return end_orphaned(cx, runner, &turn, end.is_some()).await,
        Err(e) => return Err(e),
    }
    if end.is_some() {
        store::runners::finish(cx.db(), &runner.runner_id, &p.lease_id).await?;
        store::requests::revoke_runner_tokens(cx.db(), &turn.session_id, None).await?;
    }
    Ok(accepted(count, Stopping::session(stopped(cx, &turn.session_id).await?)))
}

/// What an event post answers: how many events it took, and whether the command must end.
fn accepted(accepted: usize, stopping: Stopping) -> HttpResponse {
    ok(&wire::EventsAnswer { accepted, stopping })
}

/// Ends a runner turn whose session's turn is already over: a final post, or any post once the session
/// was stopped, finishes it (as a retried final post is answered); anything else cancels it. The runner
/// is told to stop unless its post was the last.
async fn end_orphaned(
    cx: &Cx<'_>,
    runner: &store::runners::RunnerRow,
    turn: &TurnRow,
    last: bool,
) -> Result<HttpResponse, ApiError> {
    let lease = turn.lease_id.as_deref().unwrap_or_default();
    let stop = stopped(cx, &turn.session_id).await?;
    if last || stop {
        store::runners::finish(cx.db(), &runner.runner_id, lease).await?;
        return Ok(accepted(0, Stopping::session(stop)));
    }
    store::runners::cancel(cx.db(), &turn.session_id, &turn.message_id).await?;
    Ok(accepted(0, Stopping::cancelled()))
}

async fn folder_of(cx: &Cx<'_>, session_id: &str) -> Result<(String, String), ApiError> {
    let s = store::sessions::get(cx.db(), session_id).await?.ok_or_else(|| ApiError::not_found("session"))?;
    let lane = taskfs::lane_of(cx.db(), &s.task_id, &s.session_id).await?;
    Ok((s.task_id, lane))
}

async fn files(cx: &Cx<'_>, runner: &store::runners::RunnerRow, req: &HttpRequest) -> Result<HttpResponse, ApiError> {
    let lease_id = req.query_param("lease_id").ok_or_else(|| ApiError::invalid("`lease_id` is required"))?;
    // A turn's lease, or a checkout's: the session's lane as it is now.
    let session_id = match store::checkouts::held(cx.db(), &runner.runner_id, &lease_id).await? {
        Some(c) => c.session_id,
        None => leased(cx, runner, &lease_id).await?.session_id,
    };
    let (task_id, lane) = folder_of(cx, &session_id).await?;
    let folder = Folder { workspace_id: &runner.workspace_id, task_id: &task_id, lane: &lane };
    let (db, blobs) = taskfs::parts(cx.env);
    let mut out = Vec::new();
    for f in taskfs::list(db, folder).await? {
        let (info, content) = taskfs::read(db, blobs, folder, &f.path, None).await?;
        out.push(wire::File { path: info.path, version: info.version, content });
    }
    Ok(ok(&wire::Files { files: out }))
}

async fn write_file(
    cx: &Cx<'_>,
    runner: &store::runners::RunnerRow,
    req: &HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let p: wire::WriteFile = body(req)?;
    let turn = leased(cx, runner, &p.lease_id).await?;
    let (task_id, lane) = folder_of(cx, &turn.session_id).await?;
    let folder = Folder { workspace_id: &turn.workspace_id, task_id: &task_id, lane: &lane };
    let (db, blobs) = taskfs::parts(cx.env);
    let info =
        taskfs::write(db, blobs, folder, &p.path, &p.content, Writer::Session(&turn.session_id), cx.now_ms).await?;
    // The file as the folder now has it (`taskfs`'s own view; the runner does not read it).
    Ok(ok(&info))
}

async fn delete_file(
    cx: &Cx<'_>,
    runner: &store::runners::RunnerRow,
    req: &HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let lease_id = req.query_param("lease_id").ok_or_else(|| ApiError::invalid("`lease_id` is required"))?;
    let path = req.query_param("path").ok_or_else(|| ApiError::invalid("`path` is required"))?;
    let turn = leased(cx, runner, &lease_id).await?;
    let (task_id, lane) = folder_of(cx, &turn.session_id).await?;
    let folder = Folder { workspace_id: &turn.workspace_id, task_id: &task_id, lane: &lane };
    // A retried delete whose answer was lost finds the file gone: that is its success too.
    match taskfs::delete(cx.db(), folder, &path, Writer::Session(&turn.session_id), cx.now_ms).await {
        Ok(info) => Ok(ok(&wire::Deleted { path: info.path, deleted: true, version: Some(info.version) })),
        Err(e) if e.code == Code::NotFound => Ok(ok(&wire::Deleted { path, deleted: false, version: None })),
        Err(e) => Err(e),
    }
}
