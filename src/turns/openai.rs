//! The `openai` harness: any OpenAI-compatible chat-completions endpoint runs the turn, one model call
//! per step. A step's tool calls are answered within the same step (the task folder's built-in tools and
//! the agent's declared remote MCP servers), so each persisted step holds a call and its answers.
//!
//! The endpoint and its key come from the session's workspace's sealed secrets `OPENAI_BASE_URL` and
//! `OPENAI_API_KEY` (the caller's own model account); usage is priced per model into cents and charged to
//! the wallet. A secret the agent's definition names (an MCP server's `bearer_secret`) is read only in the
//! workspace that owns the definition, never in the caller's: a public agent's owner chose where it goes.
//! Every URL is called through [`Egress`](crate::egress::Egress) (the outbound rule).
//!
//! Credentials a tool fetched (`get_credential`) are never persisted: the step keeps them in memory and,
//! while it holds one, makes its next model calls itself, so the model can use the value at once; the
//! events it stores carry a placeholder, and the value is masked wherever the model repeated it. A later
//! step rebuilds the conversation from those events and so sees only the placeholder.

use super::agent_tools::{self, bearer, post_json};
use super::ports::Ports;
use super::{mcp_client, skills, wallet};
use crate::rules::otlp::{Attr, Span};
use crate::rules::{outbound, redact};
use crate::session::{Charge, Core, Event, EventKind, LocalSql, SessionConfig, StepOutcome, Turn, TurnEnd};
use crate::store;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// Model calls one turn may make before it is stopped.
pub const MAX_STEPS: u32 = 24;
/// Conversation events sent to the model at most (the newest).
const HISTORY: u32 = 400;

/// A tool from a declared MCP server, as the model sees it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct RemoteTool {
    /// `<server>__<tool>`, what the model calls.
    name: String,
    server: String,
    tool: String,
    description: String,
    schema: Value,
}

fn sanitize(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect()
}

/// A secret of `workspace_id`, opened.
async fn secret(ports: &Ports<'_>, workspace_id: &str, name: &str) -> Result<Option<String>, String> {
    crate::domain::secrets::open(ports.db(), ports.config(), workspace_id, name).await
}

/// A secret the agent's definition names, from the workspace that owns the definition only. Sessions
/// configured before that workspace was recorded look it up from the agent (gone: nothing is sent).
async fn named_secret(ports: &Ports<'_>, config: &SessionConfig, name: &str) -> Result<Option<String>, String> {
    let owner = match &config.agent_workspace_id {
        Some(w) => w.clone(),
        None => match store::agents::get(ports.db(), &config.agent_id).await.map_err(|e| e.to_string())? {
            Some(agent) => agent.workspace_id,
            None => return Ok(None),
        },
    };
    secret(ports, &owner, name).await
}

/// The bearer a declared server is called with.
async fn server_token(ports: &Ports<'_>, config: &SessionConfig, server: &Value) -> Result<Option<String>, String> {
    match server["bearer_secret"].as_str() {
        Some(name) => named_secret(ports, config, name).await,
        None => Ok(None),
    }
}

/// Each declared server's tools, fetched once per turn and kept in the turn's harness state.
async fn remote_tools(ports: &Ports<'_>, config: &SessionConfig, turn: &Turn) -> Result<Vec<RemoteTool>, String> {
    if let Some(cached) = turn.harness.get("remote_tools") {
        return serde_json::from_value(cached.clone()).map_err(|e| e.to_string());
    }
    let mut out = Vec::new();
    for server in &config.mcp_servers {
        let (name, url) = (server["name"].as_str().unwrap_or("mcp"), server["url"].as_str().unwrap_or_default());
        let token = server_token(ports, config, server).await?;
        let tools = mcp_client::list_tools(&ports.egress(), url, token.as_deref())
            .await
            .map_err(|e| format!("MCP server `{name}`: {e}"))?;
        for t in tools {
            let tool = t["name"].as_str().unwrap_or_default().to_owned();
            let full: String = format!("{}__{}", sanitize(name), sanitize(&tool)).chars().take(64).collect();
            out.push(RemoteTool {
                name: full,
                server: name.to_owned(),
                tool,
                description: t["description"].as_str().unwrap_or_default().to_owned(),
                schema: t.get("inputSchema").cloned().unwrap_or_else(|| json!({"type": "object"})),
            });
        }
    }
    Ok(out)
}

/// The conversation as chat messages: the agent's instructions, then the log.
pub fn messages(config: &SessionConfig, history: &[Event]) -> Vec<Value> {
    let mut out = vec![json!({"role": "system", "content": format!(
        "{}\n\nYou work in a task's shared folder; use the file tools to read and write it. Reply plainly when done.",
        config.instructions
    )})];
    for e in history {
        match e.kind.as_str() {
            "user_message" => {
                let text = e.body["text"].as_str().unwrap_or_default();
                let content = match (e.body["from"].get("peer"), e.body["from"].as_str()) {
                    (Some(peer), _) => format!(
                        "[a message from peer session {}, not from the user]\n{text}",
                        peer["session_id"].as_str().unwrap_or("?")
                    ),
                    (_, Some("share_link")) => {
                        format!(
                            "[a message from a visitor through this session's share link, not from the user]\n{text}"
                        )
                    }
                    _ => text.to_owned(),
                };
                out.push(json!({"role": "user", "content": content}));
            }
            "agent_message" => out.push(json!({"role": "assistant", "content": e.body["text"]})),
            "tool_call" => {
                let call = json!({"id": e.body["call_id"], "type": "function",
                    "function": {"name": e.body["name"], "arguments": e.body["arguments"].to_string()}});
                // A model's text and its tool calls are one assistant message: strict servers refuse two
                // assistant messages in a row.
                match out.last_mut() {
                    Some(last) if last["role"] == "assistant" => {
                        match last.get_mut("tool_calls").and_then(Value::as_array_mut) {
                            Some(calls) => calls.push(call),
                            None => last["tool_calls"] = json!([call]),
                        }
                    }
                    _ => out.push(json!({"role": "assistant", "content": Value::Null, "tool_calls": [call]})),
                }
            }
            "tool_result" => {
                out.push(json!({"role": "tool", "tool_call_id": e.body["call_id"], "content": e.body["content"]}))
            }
            _ => {}
        }
    }
    out
}

/// A tool call the model made, still to be answered.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct PendingCall {
    id: String,
    name: String,
    args: Value,
}

/// A turn paused on a person: the call that waits, the calls after it, and until when.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Awaiting {
    request_id: String,
    kind: String,
    grant_id: Option<String>,
    call: PendingCall,
    rest: Vec<PendingCall>,
    deadline_ms: i64,
}

/// The calling session as the session tools see it.
async fn agent<'a>(
    ports: &Ports<'a>,
    cx: &'a crate::cx::Cx<'a>,
    config: &SessionConfig,
) -> Result<crate::agent::CallingSession<'a>, String> {
    let me = store::sessions::get(ports.db(), &config.session_id)
        .await
        .map_err(|e| e.to_string())?
        .ok_or("session not indexed")?;
    Ok(crate::agent::CallingSession::new(cx, me))
}

/// A step's work so far: the events to persist and, beside them, the same events as they really were,
/// for a model call made within this step while it holds a credential.
#[derive(Default)]
struct Work {
    outcome: StepOutcome,
    live: Vec<(EventKind, Value)>,
    /// Credential values fetched in this step: masked out of everything persisted.
    credentials: Vec<String>,
}

impl Work {
    fn push(&mut self, kind: EventKind, body: Value) {
        self.live.push((kind, body.clone()));
        self.outcome.events.push((kind, body));
    }

    /// A tool's answer: what the model sees now, and what is kept (a credential withheld).
    fn result(&mut self, call: &PendingCall, content: String, is_error: bool) {
        let body =
            |content: &str| json!({ "call_id": call.id, "name": call.name, "content": content, "is_error": is_error });
        let (kept, values) =
            if is_error { (content.clone(), vec![]) } else { crate::domain::grants::persisted(&call.name, &content) };
        self.live.push((EventKind::ToolResult, body(&content)));
        self.outcome.events.push((EventKind::ToolResult, body(&kept)));
        self.credentials.extend(values);
    }

    fn charge(&mut self, c: Charge) {
        match &mut self.outcome.charge {
            Some(total) => {
                total.cents += c.cents;
                total.input_tokens += c.input_tokens;
                total.output_tokens += c.output_tokens;
            }
            None => self.outcome.charge = Some(c),
        }
    }

    /// Ends the turn with an error, keeping what the step did before it.
    fn fail(&mut self, message: String) {
        self.push(EventKind::Error, json!({ "message": message }));
        self.outcome.end = Some(TurnEnd::Failed);
        self.outcome.next_in_ms = None;
    }

    /// What is persisted: every credential value masked wherever it appears.
    fn finish(self) -> StepOutcome {
        let mut outcome = self.outcome;
        if !self.credentials.is_empty() {
            let mask = |t: &str| redact::mask(t, &self.credentials);
            for (_, body) in &mut outcome.events {
                crate::session::map_text(body, &mask);
            }
            crate::session::map_text(&mut outcome.harness_state, &mask);
        }
        outcome
    }

    /// The conversation for a model call now: the log, then this step's events as they were.
    fn conversation(&self, config: &SessionConfig, history: &[Event]) -> Vec<Value> {
        let mut all = history.to_vec();
        all.extend(self.live.iter().map(|(kind, body)| Event {
            seq: 0,
            kind: kind.as_str().to_owned(),
            message_id: String::new(),
            at_ms: 0,
            body: body.clone(),
        }));
        messages(config, &all)
    }
}

/// Answers the model's tool calls in order. A session tool that needs a person's answer pauses the rest.
async fn run_calls(
    ports: &Ports<'_>,
    config: &SessionConfig,
    remote: &[RemoteTool],
    calls: Vec<PendingCall>,
    work: &mut Work,
    now_ms: i64,
) -> Result<Option<Awaiting>, String> {
    let mut calls = calls.into_iter();
    while let Some(c) = calls.next() {
        let started = ports.env.clock.now_ms();
        let (content, is_error) = if agent_tools::is_builtin(&c.name) {
            match agent_tools::run(ports.env, config, &c.name, &c.args, now_ms).await {
                Ok(v) => (v.to_string(), false),
                Err(e) => (json!({ "error": e }).to_string(), true),
            }
        } else if crate::agent::is_tool(&c.name) {
            let cx = crate::cx::Cx::system(ports.env, now_ms, format!("harness-{}", config.session_id));
            let me = agent(ports, &cx, config).await?;
            match crate::agent::harness_call(me, &c.name, c.args.clone()).await {
                crate::agent::HarnessCall::Done(r) => session_tool_text(r),
                crate::agent::HarnessCall::Awaiting { request_id, kind, grant_id } => {
                    let wait = ports.config().agent_wait_ms.unwrap_or(crate::agent::WAIT_MS);
                    return Ok(Some(Awaiting {
                        request_id,
                        kind,
                        grant_id,
                        call: c,
                        rest: calls.collect(),
                        deadline_ms: now_ms + wait,
                    }));
                }
            }
        } else if let Some(t) = remote.iter().find(|t| t.name == c.name) {
            let server =
                config.mcp_servers.iter().find(|s| s["name"] == t.server.as_str()).cloned().unwrap_or_default();
            let token = server_token(ports, config, &server).await?;
            let url = server["url"].as_str().unwrap_or_default();
            match mcp_client::call_tool(&ports.egress(), url, token.as_deref(), &t.tool, &c.args).await {
                Ok(r) => r,
                Err(e) => (json!({ "error": format!("MCP server `{}`: {e}", t.server) }).to_string(), true),
            }
        } else {
            (json!({ "error": format!("no tool `{}`", c.name) }).to_string(), true)
        };
        if let Some(span) =
            ports.env.meter.child_span(&format!("tool {}", c.name), 1, started, ports.env.clock.now_ms())
        {
            let span = span
                .attr("gen_ai.tool.name", Attr::Str(c.name.clone()))
                .attr("gen_ai.tool.call.id", Attr::Str(c.id.clone()));
            ports
                .env
                .meter
                .record_span(Span { error: is_error.then(|| "the tool answered an error".to_owned()), ..span });
        }
        work.result(&c, content, is_error);
    }
    Ok(None)
}

/// A model call as a span of the step's trace: model, tokens and cost (never the prompt or the answer).
fn trace_model_call(ports: &Ports<'_>, config: &SessionConfig, started: i64, called: &Result<Called, String>) {
    let Some(span) =
        ports.env.meter.child_span(&format!("chat {}", config.model), 3, started, ports.env.clock.now_ms())
    else {
        return;
    };
    let mut span = span
        .attr("gen_ai.operation.name", Attr::Str("chat".into()))
        .attr("gen_ai.request.model", Attr::Str(config.model.clone()));
    match called {
        Ok(Called::Reply(_, charge)) => {
            span = span
                .attr("gen_ai.usage.input_tokens", Attr::Int(charge.input_tokens))
                .attr("gen_ai.usage.output_tokens", Attr::Int(charge.output_tokens))
                .attr("agentsky.cost_cents", Attr::Int(charge.cents));
        }
        Ok(Called::Stopped(_, why)) => span.error = Some(why.clone()),
        // The error's words are the harness's own (the endpoint's answer is summarized and redacted).
        Err(e) => span.error = Some(redact::redact(e).chars().take(200).collect()),
    }
    ports.env.meter.record_span(span);
}

fn session_tool_text(r: crate::agent::ToolResult) -> (String, bool) {
    match r {
        Ok(v) => (v.to_string(), false),
        Err(e) => (format!("{} (code {})", e.message, e.code), true),
    }
}

/// Continues with the next model call, or pauses the turn until the awaited answer lands (the object
/// re-arms the alarm when `answer_request` signals it) or the wait runs out.
fn pause_or_continue(work: &mut Work, awaiting: Option<Awaiting>, remote: &[RemoteTool], now_ms: i64) {
    let mut state = json!({ "remote_tools": remote });
    match awaiting {
        Some(a) => {
            work.outcome.next_in_ms = Some((a.deadline_ms - now_ms).max(0));
            work.push(
                EventKind::Status,
                json!({ "text": format!("waiting for the user to answer request {}", a.request_id) }),
            );
            state["awaiting"] = serde_json::to_value(&a).unwrap_or(Value::Null);
        }
        None => work.outcome.next_in_ms = Some(0),
    }
    work.outcome.harness_state = state;
}

/// After a pause: the awaited call's result, then the calls after it. `Some` while the turn still waits.
async fn resume(
    ports: &Ports<'_>,
    config: &SessionConfig,
    remote: &[RemoteTool],
    waiting: Value,
    work: &mut Work,
    now_ms: i64,
) -> Result<Option<Awaiting>, String> {
    let a: Awaiting = serde_json::from_value(waiting).map_err(|e| e.to_string())?;
    let cx = crate::cx::Cx::system(ports.env, now_ms, format!("harness-{}", config.session_id));
    let me = agent(ports, &cx, config).await?;
    let (content, is_error) =
        session_tool_text(crate::agent::harness_resume(me, &a.kind, &a.request_id, a.grant_id.as_deref()).await);
    work.result(&a.call, content, is_error);
    run_calls(ports, config, remote, a.rest, work, now_ms).await
}

fn failed(message: String) -> StepOutcome {
    let mut work = Work::default();
    work.fail(message);
    work.outcome
}

/// One model call and the answers to the tools it called (more calls while the step holds a credential).
pub async fn step<S: LocalSql + ?Sized>(
    core: &Core<'_, S>,
    ports: &Ports<'_>,
    config: &SessionConfig,
    turn: &Turn,
    now_ms: i64,
) -> StepOutcome {
    match run(core, ports, config, turn, now_ms).await {
        Ok(outcome) => outcome,
        Err(message) => failed(message),
    }
}

/// The endpoint's answer to one chat-completions call.
/// What a model call came to: its answer and what it cost, or no call at all because a budget or the
/// wallet stopped the turn (with the reason and why, in words).
enum Called {
    Reply(Value, Charge),
    Stopped(TurnEnd, String),
}

/// One chat-completions call, through the outbound rule, paid from the wallet under ledger entry
/// `entry_id` ([`wallet::metered`]).
async fn complete(
    ports: &Ports<'_>,
    config: &SessionConfig,
    entry_id: &str,
    body: &Value,
    now_ms: i64,
) -> Result<Called, String> {
    let base = secret(ports, &config.workspace_id, "OPENAI_BASE_URL").await?.ok_or(
        "this workspace has no OPENAI_BASE_URL secret: set it (and OPENAI_API_KEY) with PUT /v1/secrets/{name}",
    )?;
    let key = secret(ports, &config.workspace_id, "OPENAI_API_KEY").await?;
    let url = format!("{}/chat/completions", base.trim_end_matches('/'));
    let (resp, charge) =
        match wallet::metered(ports, config, entry_id, post_json(&url, bearer(key.as_deref()), body), now_ms).await {
            Ok(paid) => paid,
            Err(wallet::Unpaid::Short { reason, why }) => return Ok(Called::Stopped(reason, why)),
            Err(wallet::Unpaid::Failed(e)) => return Err(format!("the model endpoint: {e}")),
        };
    if resp.status != 200 {
        return Err(format!("the model endpoint answered {}", outbound::summary(resp.status, &resp.body)));
    }
    Ok(Called::Reply(resp.json_body(), charge))
}

async fn run<S: LocalSql + ?Sized>(
    core: &Core<'_, S>,
    ports: &Ports<'_>,
    config: &SessionConfig,
    turn: &Turn,
    now_ms: i64,
) -> Result<StepOutcome, String> {
    if turn.step >= MAX_STEPS {
        return Err(format!("the turn made {MAX_STEPS} model calls without finishing; it stops here"));
    }
    let mut work = Work::default();
    if let Some(waiting) = turn.harness.get("awaiting") {
        let remote: Vec<RemoteTool> = serde_json::from_value(turn.harness["remote_tools"].clone()).unwrap_or_default();
        let awaiting = resume(ports, config, &remote, waiting.clone(), &mut work, now_ms).await?;
        pause_or_continue(&mut work, awaiting, &remote, now_ms);
        // A credential fetched just now is used in this step; otherwise the next step calls the model.
        if work.credentials.is_empty() || work.outcome.next_in_ms != Some(0) {
            return Ok(work.finish());
        }
    }
    let remote = remote_tools(ports, config, turn).await?;
    let company_skills = skills::listing(ports.db(), &config.workspace_id).await?;
    let mut tools = agent_tools::specs(!company_skills.is_empty());
    tools.extend(crate::agent::function_specs());
    tools.extend(remote.iter().map(|t| {
        json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.schema}})
    }));
    let history = core.history(HISTORY).map_err(|r| r.message)?;
    let mut calls_left = MAX_STEPS - turn.step;
    loop {
        let mut body =
            json!({ "model": config.model, "messages": work.conversation(config, &history), "tools": tools });
        skills::mention(&mut body["messages"], &company_skills);
        // Only asked for when set: models that do not reason refuse the field.
        if config.thinking != "off" {
            body["reasoning_effort"] = json!(config.thinking);
        }
        // Each model call of the step is paid under its own entry: the step's, then `_c1`, `_c2`, … for the
        // calls a held credential adds (the same on a replay, so each is charged once).
        let made = (MAX_STEPS - turn.step) - calls_left;
        // A cancel or a stop that landed while this step ran ends it before its next model call; the
        // step's output is then dropped at its boundary (`Core::apply`).
        if made > 0 && !still_running(core, turn) {
            return Ok(work.finish());
        }
        let entry_id = match made {
            0 => format!("use_{}_{}_s{}", config.session_id, turn.message_id.as_deref().unwrap_or_default(), turn.step),
            n => format!(
                "use_{}_{}_s{}_c{n}",
                config.session_id,
                turn.message_id.as_deref().unwrap_or_default(),
                turn.step
            ),
        };
        let called_at = ports.env.clock.now_ms();
        let called = complete(ports, config, &entry_id, &body, now_ms).await;
        trace_model_call(ports, config, called_at, &called);
        let (reply, charge) = match called {
            Ok(Called::Reply(reply, charge)) => (reply, charge),
            Ok(Called::Stopped(reason, why)) => {
                work.push(EventKind::Status, json!({ "text": why }));
                work.outcome.end = Some(reason);
                return Ok(work.finish());
            }
            // The first call's failure is the step's; a later one keeps what the step already did.
            Err(e) if work.live.is_empty() => return Err(e),
            Err(e) => {
                work.fail(e);
                return Ok(work.finish());
            }
        };
        calls_left -= 1;
        let message = &reply["choices"][0]["message"];
        if message.is_null() {
            work.fail("the model endpoint answered without choices[0].message".into());
            return Ok(work.finish());
        }
        work.charge(charge);
        let calls = message["tool_calls"].as_array().cloned().unwrap_or_default();
        if calls.is_empty() {
            let text = message["content"].as_str().unwrap_or_default();
            work.push(EventKind::AgentMessage, json!({ "text": text, "model": config.model }));
            work.outcome.end = Some(TurnEnd::Completed);
            work.outcome.harness_state = json!({ "remote_tools": remote });
            return Ok(work.finish());
        }
        if let Some(text) = message["content"].as_str().filter(|t| !t.is_empty()) {
            work.push(EventKind::AgentMessage, json!({ "text": text, "model": config.model }));
        }
        let calls: Vec<PendingCall> = calls
            .iter()
            .map(|call| PendingCall {
                id: call["id"].as_str().unwrap_or_default().to_owned(),
                name: call["function"]["name"].as_str().unwrap_or_default().to_owned(),
                args: call["function"]["arguments"]
                    .as_str()
                    .and_then(|a| serde_json::from_str(a).ok())
                    .unwrap_or_else(|| json!({})),
            })
            .collect();
        for c in &calls {
            work.push(EventKind::ToolCall, json!({ "call_id": c.id, "name": c.name, "arguments": c.args }));
        }
        let awaiting = run_calls(ports, config, &remote, calls, &mut work, now_ms).await?;
        pause_or_continue(&mut work, awaiting, &remote, now_ms);
        // Holding a credential, the step calls the model again itself (it is never persisted for a later
        // step to use); a pause, or the turn's last allowed call, ends the step.
        if work.credentials.is_empty() || work.outcome.next_in_ms != Some(0) || calls_left == 0 {
            return Ok(work.finish());
        }
    }
}

/// Whether `turn` is still the session's running turn (the object's storage is read afresh).
fn still_running<S: LocalSql + ?Sized>(core: &Core<'_, S>, turn: &Turn) -> bool {
    core.turn().is_ok_and(|now| now.state == crate::session::TurnState::Running && now.message_id == turn.message_id)
}

/// Grades one criterion with a separate model call that sees only the objective, the criterion and the
/// agent's latest reply: its own context, not the agent's.
pub async fn grade(
    ports: &Ports<'_>,
    config: &SessionConfig,
    entry_id: &str,
    objective: &str,
    criterion: &crate::session::goal::Criterion,
    last_reply: &str,
    now_ms: i64,
) -> Result<(crate::session::goal::Verdict, Charge), String> {
    let body = json!({
        "model": config.model,
        "messages": [
            {"role": "system", "content": "You are a strict grader. Decide whether the work meets the criterion. Answer with JSON only: {\"met\": true or false, \"reason\": \"one sentence\"}."},
            {"role": "user", "content": format!("Goal: {objective}\nCriterion: {}\nThe agent's latest reply:\n{last_reply}", criterion.text)},
        ],
    });
    let (reply, charge) = match complete(ports, config, entry_id, &body, now_ms).await? {
        Called::Reply(reply, charge) => (reply, charge),
        Called::Stopped(_, why) => return Err(why),
    };
    let text = reply["choices"][0]["message"]["content"].as_str().unwrap_or_default();
    let json_part = text.find('{').and_then(|a| text.rfind('}').map(|b| &text[a..=b])).unwrap_or(text);
    let verdict: Value = serde_json::from_str(json_part).unwrap_or(Value::Null);
    let met = verdict["met"].as_bool();
    let reason = verdict["reason"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| "the grader's answer was not readable JSON".into());
    Ok((
        crate::session::goal::Verdict { criterion: criterion.text.clone(), met: Some(met.unwrap_or(false)), reason },
        charge,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_calls_and_results_become_chat_messages() {
        let config = SessionConfig {
            session_id: "s".into(),
            workspace_id: "w".into(),
            task_id: "s".into(),
            agent_id: "a".into(),
            harness: "openai".into(),
            model: "m".into(),
            thinking: "off".into(),
            instructions: "Be brief.".into(),
            mcp_servers: vec![],
            agent_workspace_id: None,
            budget_cents: None,
            started_by_key_id: None,
            run_price: None,
            placement: crate::rules::placement::Placement::Runner,
            command: None,
            egress: vec![],
        };
        let ev = |kind: &str, body: Value| Event { seq: 0, kind: kind.into(), message_id: "m".into(), at_ms: 0, body };
        let history = vec![
            ev("user_message", json!({"text": "hi", "from": "user"})),
            ev("tool_call", json!({"call_id": "c1", "name": "list_task_files", "arguments": {}})),
            ev("tool_call", json!({"call_id": "c2", "name": "read_task_file", "arguments": {"path": "a"}})),
            ev("tool_result", json!({"call_id": "c1", "content": "[]"})),
            ev("tool_result", json!({"call_id": "c2", "content": "x"})),
            ev("status", json!({"text": "ignored"})),
            ev("agent_message", json!({"text": "done"})),
            ev("user_message", json!({"text": "fyi", "from": {"peer": {"session_id": "ses_p"}}})),
            ev("user_message", json!({"text": "hello", "from": "share_link"})),
        ];
        let m = messages(&config, &history);
        assert_eq!(m[0]["role"], "system");
        assert!(m[0]["content"].as_str().unwrap().starts_with("Be brief."));
        assert_eq!(m[2]["tool_calls"].as_array().unwrap().len(), 2, "consecutive calls are one assistant message");
        assert_eq!(m[3]["tool_call_id"], "c1");
        assert_eq!(m[5], json!({"role": "assistant", "content": "done"}));
        assert!(m[6]["content"].as_str().unwrap().contains("peer session ses_p"));
        assert!(m[7]["content"]
            .as_str()
            .unwrap()
            .starts_with("[a message from a visitor through this session's share link"));
        assert_eq!(m.len(), 8);
        let text_then_call = vec![
            ev("agent_message", json!({"text": "Now the arithmetic."})),
            ev("tool_call", json!({"call_id": "c3", "name": "calc", "arguments": {}})),
        ];
        let m = messages(&config, &text_then_call);
        assert_eq!(m.len(), 2, "text and calls are one assistant message");
        assert_eq!(
            (m[1]["content"].as_str(), m[1]["tool_calls"][0]["id"].as_str()),
            (Some("Now the arithmetic."), Some("c3"))
        );
    }
}
