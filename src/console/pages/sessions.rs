//! A session: its transcript as it grows, what it waits on, and everything a person steers it with:
//! send a message, stop its turn or the whole session, switch model or thinking, its share link, its goal, the record of what was
//! decided about it, and the Run locally and Deploy buttons for the commands it taught.

use super::Page;
use crate::console::layout::{action, hidden, money, time, verbatim};
use crate::console::render::{self, word};
use crate::console::Ctx;
use crate::domain::sandboxes::SandboxView;
use crate::error::ApiError;
use crate::http::HttpResponse;
use crate::ops::call;
use crate::ops::commands::CommandRun;
use crate::ops::connectors::ListConnectors;
use crate::ops::files::ReadTaskFile;
use crate::ops::goals::{GetGoal, GoalView};
use crate::ops::name;
use crate::ops::records::ReadSessionRecord;
use crate::ops::sessions::{GetSession, ReadSession};
use crate::rules::ids;
use crate::rules::params::{param, Int};
use crate::session::goal::GoalStatus;
use crate::store::reported;
use crate::store::sessions::SessionStatus;
use maud::{html, Markup};
use serde_json::{json, Value};

/// Pages of history the page shows at first (200 events each); older ones are left out, and said so.
const HISTORY_PAGES: usize = 5;
/// How long the transcript's stream holds a request before the script asks again.
const STREAM_WAIT_SECONDS: i64 = 25;

const THINKING: &[&str] = &["off", "low", "medium", "high"];
const DECISIONS: &[&str] = &["adopted", "approve", "did_the_job", "revise", "rerun", "discard"];

/// The whole log from the start, up to [`HISTORY_PAGES`] pages: events, the cursor after them, and
/// whether more were left out.
async fn history(p: &Ctx<'_>, sid: &str) -> Result<(Vec<Value>, String, bool), ApiError> {
    let mut events = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..HISTORY_PAGES {
        let page = call::read_session(p.cx, reading(sid, cursor.take())?).await?;
        // Each event is the transcript's own JSON, as the API gives it.
        events.extend(page.events.into_iter().map(Value::Object));
        cursor = Some(page.cursor);
        if !page.has_more {
            return Ok((events, cursor.unwrap_or_default(), false));
        }
    }
    Ok((events, cursor.unwrap_or_default(), true))
}

/// `read_session` of one session from `cursor` (from the start when `None`).
fn reading(sid: &str, cursor: Option<String>) -> Result<ReadSession, ApiError> {
    let session_id = param("session_id", sid)?;
    Ok(ReadSession { session_id, cursor, message_id: None, wait_seconds: None, limit: None, workspace: None })
}

fn goal(p: &Ctx<'_>, sid: &str, view: &GoalView) -> Markup {
    let off = !p.can_write();
    html! {
        @if let Some(g) = &view.goal {
            @let status = word(&g.status);
            p { (verbatim(&g.objective)) }
            p.muted.small {
                (render::state(&status)) " · iteration " (g.iterations) " of " (g.max_iterations)
                " · " (money(g.spent_cents)) " spent"
                @if let Some(why) = &g.stopped_reason { " · " (why) }
            }
            @if !g.last_verdicts.is_empty() {
                ul.small { @for x in &g.last_verdicts { li { (if x.met == Some(true) { "✓ " } else { "✗ " }) (x.criterion) " — " span.muted { (x.reason) } } } }
            }
            @if g.status == GoalStatus::Active {
                (action(p, name::clear_goal, &[("session_id", sid), ("idempotency_key", &ids::new_id("ik"))], "Clear goal", "", None))
            }
        } @else {
            p.muted { "No goal. A goal keeps the session working on its own until it is met or a limit is reached." }
        }
        details {
            summary { "Set a goal" }
            form method="post" action=(p.action_url(name::set_goal)) {
                (hidden(p))
                input type="hidden" name="session_id" value=(sid);
                input type="hidden" name="idempotency_key" value=(ids::new_id("ik"));
                label { "Objective" textarea name="objective" required maxlength="4000" disabled[off] {} }
                label { "Most turns" input type="number" name="max_iterations" min="1" max="50" value="10" disabled[off]; }
                div.row { button.primary type="submit" disabled[off] { "Set goal" } }
            }
        }
    }
}

pub async fn page(p: &Ctx<'_>, sid: &str) -> Result<Page, ApiError> {
    let session_id = || param("session_id", sid);
    let got = call::get_session(p.cx, GetSession { session_id: session_id()?, workspace: None }).await?;
    let (info, sandbox_view) = (got.session, got.sandbox);
    let (events, cursor, cut) = history(p, sid).await?;
    let goal_view = call::get_goal(p.cx, GetGoal { session_id: session_id()?, workspace: None }).await?;
    let record =
        call::read_session_record(p.cx, ReadSessionRecord { session_id: session_id()?, workspace: None }).await?;
    let requests = call::list_requests(p.cx, super::requests_of(p)).await?.requests;
    let targets = call::list_connectors(p.cx, ListConnectors { workspace: Some(p.ws.slug.clone()) }).await?.connectors;
    let project = async {
        let read = ReadTaskFile {
            task_id: param("task_id", &info.task_id)?,
            path: param("path", ".agentsky/project.json")?,
            version: None,
            session_id: None,
            workspace: None,
        };
        call::read_task_file(p.cx, read).await
    };
    // The project file is the agent's own JSON.
    let run_command = project
        .await
        .ok()
        .and_then(|f| serde_json::from_str::<Value>(&f.content).ok())
        .and_then(|v| v["dev"]["command"].as_str().map(str::to_owned));
    let deploys: Vec<_> = targets.iter().filter_map(|c| Some((c, c.deploy_command.as_deref()?))).collect();
    let mine: Vec<_> = requests.iter().filter(|r| r.request.session_id == sid).collect();
    // A coding agent CLI pays its own provider: what it reported is shown beside the spend, not in it. The
    // session's own total, read once (`get_session` above already let this person see the session).
    let reported = match info.harness.as_str() {
        "claude-code" | "codex" => Some(reported::usd(reported::session_total(p.cx.db(), sid).await?)),
        _ => None,
    };
    let status = info.status;
    let off = !p.can_write();
    Ok(Page {
        title: info.title.clone(),
        nav: "/board",
        main: html! {
            header data-live="session-head" {
                h1 { (info.title) }
                p.muted {
                    (render::state(status.as_str())) " " strong { (info.agent_name) } " · " code { (info.model) }
                    " · thinking " (info.thinking) " · "
                    (render::spend(info.spent_cents, info.budget_cents))
                    @if let Some(usd) = reported { " · " span data-reported=(usd) { (format!("${usd:.4}")) " reported by the agent's CLI (not charged)" } }
                    " · " a href=(p.link(&format!("/tasks/{}", info.task_id))) { "its task" }
                    @if !info.note.is_empty() { br; "Status: " (info.note) }
                }
            }
            div.split {
                div {
                    section data-live="session-requests" {
                        @for r in mine { (render::request(p, r)) }
                    }
                    @if cut { p.muted.small { "Older events are not shown; this page shows the first " (HISTORY_PAGES * 200) "." } }
                    div.transcript data-stream=(p.link(&format!("/sessions/{sid}/stream"))) data-cursor=(cursor) data-status=(status.as_str()) {
                        @for e in &events { (render::event(e)) }
                    }
                    form.card method="post" action=(p.action_url(name::send_message)) {
                        (hidden(p))
                        input type="hidden" name="session_id" value=(sid);
                        input type="hidden" name="idempotency_key" value=(ids::new_id("ik"));
                        label { "Message" textarea name="message" required maxlength="64000" disabled[off || status == SessionStatus::Terminated] {} }
                        div.row {
                            button.primary type="submit" disabled[off || status == SessionStatus::Terminated] { "Send" }
                            span.muted.small { "Sent when the session is idle; while a turn runs, wait for it to finish or stop the turn." }
                        }
                    }
                }
                aside {
                    h2 { "Controls" }
                    div.row data-live="session-controls" {
                        @if status == SessionStatus::Running {
                            (action(p, name::cancel_turn, &[("session_id", sid)], "Stop turn", "", Some("Cancel the running turn? The session stays and takes the next message.")))
                        }
                        (action(p, name::stop_session, &[("session_id", sid)], "Stop session", "danger", Some("Stop this session? Its transcript and files stay.")))
                        (action(p, name::share_session, &[("session_id", sid), ("view_only", "true")], "Share read-only link", "", None))
                        (action(p, name::share_session, &[("session_id", sid), ("enabled", "false")], "Turn link off", "link", None))
                    }
                    form method="post" action=(p.action_url(name::switch_model)) {
                        (hidden(p))
                        input type="hidden" name="session_id" value=(sid);
                        label { "Model" input type="text" name="model" value=(info.model) maxlength="100" disabled[off]; }
                        label { "Thinking" select name="thinking" disabled[off] {
                            @for t in THINKING { option value=(t) selected[*t == info.thinking] { (t) } }
                        } }
                        div.row { button type="submit" disabled[off] { "Switch" } }
                    }
                    @if let Some(sb) = &sandbox_view {
                        h2 { "Sandbox" }
                        div data-live="session-sandbox" { (sandbox(sb)) }
                    }
                    h2 { "Run and deploy" }
                    div.row {
                        @match &run_command {
                            Some(cmd) => {
                                (action(p, name::run_command, &[("session_id", sid), ("kind", "run")], "Run locally", "primary", None))
                                span.muted.small { code { (cmd) } }
                            }
                            None => (action(p, name::ask_command, &[("session_id", sid), ("kind", "run")], "Ask for a run command", "", None)),
                        }
                    }
                    @for (c, command) in &deploys {
                        div.row {
                            (action(p, name::run_command, &[("session_id", sid), ("kind", "deploy"), ("target_id", &c.connector_id)],
                                &format!("Deploy to {}", c.name), "", Some("Run the deploy command now?")))
                            span.muted.small { code { (command) } }
                        }
                    }
                    @if deploys.is_empty() {
                        (action(p, name::ask_command, &[("session_id", sid), ("kind", "deploy")], "Ask for a deploy command", "link", None))
                    }
                    h2 { "Goal" }
                    div data-live="session-goal" { (goal(p, sid, &goal_view)) }
                    h2 { "Record" }
                    ul.small {
                        @for r in record.decisions.iter().chain(&record.outcomes) {
                            li { strong { (r.name) } @if let Some(v) = &r.value { " " (v) }
                                 @if !r.note.is_empty() { " — " (r.note) } " " span.muted { (time(r.recorded_ms)) } }
                        }
                    }
                    @if record.decisions.is_empty() { p.muted.small { "Nobody decided about this result yet." } }
                    form method="post" action=(p.action_url(name::record_session)) {
                        (hidden(p))
                        input type="hidden" name="session_id" value=(sid);
                        input type="hidden" name="idempotency_key" value=(ids::new_id("ik"));
                        label { "Decision" select name="name" disabled[off] { @for d in DECISIONS { option value=(d) { (d.replace('_', " ")) } } } }
                        label { "Why (optional)" input type="text" name="note" maxlength="2000" disabled[off]; }
                        div.row { button type="submit" disabled[off] { "Record" } }
                    }
                }
            }
        },
    })
}

/// A hosted session's sandbox: its state and boot time, its running time and cost, its newest boots (its
/// log) and what it may reach.
fn sandbox(v: &SandboxView) -> Markup {
    let ran = |s: i64| if s >= 60 { format!("{} min {} s", s / 60, s % 60) } else { format!("{s} s") };
    let took = |ms: i64| super::health::ms(ms as f64);
    let booted = v.boots.first().and_then(|b| Some(b.ready_ms? - b.started_ms));
    let (seconds, cents) = v.boots.iter().fold((0, 0), |(s, c), b| (s + b.seconds, c + b.cents.unwrap_or(0)));
    html! {
        p data-sandbox=(v.state) {
            strong { @if v.state == "starting" { "Starting sandbox…" } @else { "Sandbox " (v.state) } }
            @if let Some(b) = booted { " · booted in " (took(b)) }
            " · ran " (ran(seconds)) " · " (money(cents))
        }
        ol.small {
            @for b in &v.boots {
                li {
                    (time(b.started_ms)) " started"
                    @if let Some(r) = b.ready_ms { " · ready in " (took(r - b.started_ms)) }
                    " · ran " (ran(b.seconds))
                    @if let Some(e) = &b.ended { " · " (e) }
                    @if let Some(c) = b.cents.filter(|c| *c > 0) { " · " (money(c)) }
                }
            }
        }
        @if !v.egress.is_empty() { p.small.muted { "May reach: " (v.egress.join(", ")) } }
    }
}

/// `GET …/sessions/<id>/stream?after=…`: new events after the cursor, held in the session's own object
/// until something lands (or 25 s), as HTML the script appends.
pub async fn stream(p: &Ctx<'_>, sid: &str) -> HttpResponse {
    let read = async {
        let read = ReadSession {
            wait_seconds: Some(const { Int::new(STREAM_WAIT_SECONDS) }),
            ..reading(sid, p.query("after"))?
        };
        call::read_session(p.cx, read).await
    };
    match read.await {
        Ok(page) => {
            let html: String =
                page.events.into_iter().map(|e| render::event(&Value::Object(e)).into_string()).collect();
            HttpResponse::json(200, &json!({ "html": html, "cursor": page.cursor, "status": page.status }))
                .with_header("cache-control", "no-store")
        }
        Err(e) => HttpResponse::json(e.code.http(), &e.body()),
    }
}

/// What a Run locally or Deploy button's command did.
pub fn command_result(r: &CommandRun) -> Markup {
    html! {
        p { code { (r.command) } }
        @match r.exit_code {
            Some(0) => p.flash.ok { "Exited 0." },
            Some(code) => p.flash.error { "Exited " (code) "." },
            None => p.flash.error { (r.reason.as_deref().unwrap_or_default()) },
        }
        @if let (Some(_), Some(why)) = (r.exit_code, &r.reason) { p.muted { (why) } }
        @if !r.output.is_empty() { pre { (r.output) } }
    }
}
