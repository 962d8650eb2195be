//! A session: its transcript as it grows, what it waits on, and everything a person steers it with:
//! send a message, stop its turn or the whole session, switch model or thinking, its share link, its goal, the record of what was
//! decided about it, and the Run locally and Deploy buttons for the commands it taught.

use super::{list, Page};
use crate::console::layout::{action, hidden, money, time, verbatim};
use crate::console::render::{self, s};
use crate::console::Ctx;
use crate::error::ApiError;
use crate::http::HttpResponse;
use crate::rules::ids;
use crate::store::reported;
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
        let mut args = json!({ "session_id": sid });
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let page = p.call("read_session", args).await?;
        events.extend(list(&page, "events").iter().cloned());
        cursor = page["cursor"].as_str().map(str::to_owned);
        if page["has_more"] != true {
            return Ok((events, cursor.unwrap_or_default(), false));
        }
    }
    Ok((events, cursor.unwrap_or_default(), true))
}

fn goal(p: &Ctx<'_>, sid: &str, g: &Value) -> Markup {
    let off = !p.can_write();
    html! {
        @if g.is_null() {
            p.muted { "No goal. A goal keeps the session working on its own until it is met or a limit is reached." }
        } @else {
            p { (verbatim(s(&g["objective"]))) }
            p.muted.small {
                (render::state(s(&g["status"]))) " · iteration " (g["iterations"].as_i64().unwrap_or(0)) " of " (g["max_iterations"].as_i64().unwrap_or(0))
                " · " (money(g["spent_cents"].as_i64().unwrap_or(0))) " spent"
                @if let Some(why) = g["stopped_reason"].as_str() { " · " (why) }
            }
            @if let Some(v) = g["last_verdicts"].as_array().filter(|v| !v.is_empty()) {
                ul.small { @for x in v { li { (if x["met"] == true { "✓ " } else { "✗ " }) (s(&x["criterion"])) " — " span.muted { (s(&x["reason"])) } } } }
            }
            @if g["status"] == "active" {
                (action(p, "clear_goal", &[("session_id", sid), ("idempotency_key", &ids::new_id("ik"))], "Clear goal", "", None))
            }
        }
        details {
            summary { "Set a goal" }
            form method="post" action=(p.link("/op/set_goal")) {
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
    let info = p.call("get_session", json!({ "session_id": sid })).await?;
    let (events, cursor, cut) = history(p, sid).await?;
    let goal_view = p.call("get_goal", json!({ "session_id": sid })).await?;
    let record = p.call("read_session_record", json!({ "session_id": sid })).await?;
    let requests = p.call("list_requests", json!({ "workspace": p.ws.slug })).await?;
    let targets = p.call("list_connectors", json!({ "workspace": p.ws.slug })).await?;
    let project =
        p.call("read_task_file", json!({ "task_id": info["task_id"], "path": ".agentsky/project.json" })).await;
    let run_command = project
        .ok()
        .and_then(|f| serde_json::from_str::<Value>(s(&f["content"])).ok())
        .and_then(|v| v["dev"]["command"].as_str().map(str::to_owned));
    let deploys: Vec<&Value> =
        list(&targets, "connectors").iter().filter(|c| c["deploy_command"].is_string()).collect();
    let mine: Vec<&Value> = list(&requests, "requests").iter().filter(|r| r["session_id"] == sid).collect();
    // A coding agent CLI pays its own provider: what it reported is shown beside the spend, not in it. The
    // session's own total, read once (`get_session` above already let this person see the session).
    let reported = match s(&info["harness"]) {
        "claude-code" | "codex" => Some(reported::usd(reported::session_total(p.cx.db(), sid).await?)),
        _ => None,
    };
    let status = s(&info["status"]);
    let off = !p.can_write();
    Ok(Page {
        title: s(&info["title"]).to_owned(),
        nav: "/board",
        main: html! {
            header data-live="session-head" {
                h1 { (s(&info["title"])) }
                p.muted {
                    (render::state(status)) " " strong { (s(&info["agent_name"])) } " · " code { (s(&info["model"])) }
                    " · thinking " (s(&info["thinking"])) " · "
                    (render::spend(info["spent_cents"].as_i64().unwrap_or(0), info["budget_cents"].as_i64()))
                    @if let Some(usd) = reported { " · " span data-reported=(usd) { (format!("${usd:.4}")) " reported by the agent's CLI (not charged)" } }
                    " · " a href=(p.link(&format!("/tasks/{}", s(&info["task_id"])))) { "its task" }
                    @if !s(&info["note"]).is_empty() { br; "Status: " (s(&info["note"])) }
                }
            }
            div.split {
                div {
                    section data-live="session-requests" {
                        @for r in &mine { (render::request(p, r)) }
                    }
                    @if cut { p.muted.small { "Older events are not shown; this page shows the first " (HISTORY_PAGES * 200) "." } }
                    div.transcript data-stream=(p.link(&format!("/sessions/{sid}/stream"))) data-cursor=(cursor) data-status=(status) {
                        @for e in &events { (render::event(e)) }
                    }
                    form.card method="post" action=(p.link("/op/send_message")) {
                        (hidden(p))
                        input type="hidden" name="session_id" value=(sid);
                        input type="hidden" name="idempotency_key" value=(ids::new_id("ik"));
                        label { "Message" textarea name="message" required maxlength="64000" disabled[off || status == "terminated"] {} }
                        div.row {
                            button.primary type="submit" disabled[off || status == "terminated"] { "Send" }
                            span.muted.small { "Sent when the session is idle; while a turn runs, wait for it to finish or stop the turn." }
                        }
                    }
                }
                aside {
                    h2 { "Controls" }
                    div.row data-live="session-controls" {
                        @if status == "running" {
                            (action(p, "cancel_turn", &[("session_id", sid)], "Stop turn", "", Some("Cancel the running turn? The session stays and takes the next message.")))
                        }
                        (action(p, "stop_session", &[("session_id", sid)], "Stop session", "danger", Some("Stop this session? Its transcript and files stay.")))
                        (action(p, "share_session", &[("session_id", sid), ("view_only", "true")], "Share read-only link", "", None))
                        (action(p, "share_session", &[("session_id", sid), ("enabled", "false")], "Turn link off", "link", None))
                    }
                    form method="post" action=(p.link("/op/switch_model")) {
                        (hidden(p))
                        input type="hidden" name="session_id" value=(sid);
                        label { "Model" input type="text" name="model" value=(s(&info["model"])) maxlength="100" disabled[off]; }
                        label { "Thinking" select name="thinking" disabled[off] {
                            @for t in THINKING { option value=(t) selected[*t == s(&info["thinking"])] { (t) } }
                        } }
                        div.row { button type="submit" disabled[off] { "Switch" } }
                    }
                    h2 { "Run and deploy" }
                    div.row {
                        @match &run_command {
                            Some(cmd) => {
                                (action(p, "run_command", &[("session_id", sid), ("kind", "run")], "Run locally", "primary", None))
                                span.muted.small { code { (cmd) } }
                            }
                            None => (action(p, "ask_command", &[("session_id", sid), ("kind", "run")], "Ask for a run command", "", None)),
                        }
                    }
                    @for c in &deploys {
                        div.row {
                            (action(p, "run_command", &[("session_id", sid), ("kind", "deploy"), ("target_id", s(&c["connector_id"]))],
                                &format!("Deploy to {}", s(&c["name"])), "", Some("Run the deploy command now?")))
                            span.muted.small { code { (s(&c["deploy_command"])) } }
                        }
                    }
                    @if deploys.is_empty() {
                        (action(p, "ask_command", &[("session_id", sid), ("kind", "deploy")], "Ask for a deploy command", "link", None))
                    }
                    h2 { "Goal" }
                    div data-live="session-goal" { (goal(p, sid, &goal_view["goal"])) }
                    h2 { "Record" }
                    ul.small {
                        @for r in list(&record, "decisions").iter().chain(list(&record, "outcomes")) {
                            li { strong { (s(&r["name"])) } @if let Some(v) = r["value"].as_str() { " " (v) }
                                 @if let Some(n) = r["note"].as_str() { " — " (n) } " " span.muted { (time(r["created_ms"].as_i64().unwrap_or(0))) } }
                        }
                    }
                    @if list(&record, "decisions").is_empty() { p.muted.small { "Nobody decided about this result yet." } }
                    form method="post" action=(p.link("/op/record_session")) {
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

/// `GET …/sessions/<id>/stream?after=…`: new events after the cursor, held in the session's own object
/// until something lands (or 25 s), as HTML the script appends.
pub async fn stream(p: &Ctx<'_>, sid: &str) -> HttpResponse {
    let mut args = json!({ "session_id": sid, "wait_seconds": STREAM_WAIT_SECONDS });
    if let Some(after) = p.query("after") {
        args["cursor"] = json!(after);
    }
    match p.call("read_session", args).await {
        Ok(page) => {
            let html: String = list(&page, "events").iter().map(|e| render::event(e).into_string()).collect();
            HttpResponse::json(200, &json!({ "html": html, "cursor": page["cursor"], "status": page["status"] }))
                .with_header("cache-control", "no-store")
        }
        Err(e) => HttpResponse::json(e.code.http(), &e.body()),
    }
}

/// What a Run locally or Deploy button's command did.
pub fn command_result(r: &Value) -> Markup {
    html! {
        p { code { (s(&r["command"])) } }
        @match r["exit_code"].as_i64() {
            Some(0) => p.flash.ok { "Exited 0." },
            Some(code) => p.flash.error { "Exited " (code) "." },
            None => p.flash.error { (s(&r["reason"])) },
        }
        @if let (Some(_), Some(why)) = (r["exit_code"].as_i64(), r["reason"].as_str()) { p.muted { (why) } }
        @if !s(&r["output"]).is_empty() { pre { (s(&r["output"])) } }
    }
}
