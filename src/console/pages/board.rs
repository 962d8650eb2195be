//! The board: tasks as cards (what each was asked, its sessions and agents with the status line each set,
//! whether it runs, waits for you, idles or is done, and its spend against budget), and a task's page:
//! its sessions, requests, files, artifacts and lanes.

use super::{empty, list, Page};
use crate::console::layout::{action, hidden, money, time};
use crate::console::render::{self, s, spend};
use crate::console::Ctx;
use crate::error::ApiError;
use maud::{html, Markup};
use serde_json::{json, Value};

/// The word a person reads for a task: requests first (someone waits for them), then running work.
fn task_state(task: &Value, sessions: &[&Value]) -> &'static str {
    // A task in a list counts its requests; one task's view lists them.
    let open = task["open_requests"].as_i64().or_else(|| task["open_requests"].as_array().map(|a| a.len() as i64));
    if open.unwrap_or(0) > 0 {
        "waiting for you"
    } else if task["running"].as_i64().unwrap_or(0) > 0 {
        "running"
    } else if !sessions.is_empty() && sessions.iter().all(|s| s["status"] == "terminated") {
        "done"
    } else {
        "idle"
    }
}

fn session_line(p: &Ctx<'_>, sn: &Value) -> Markup {
    html! {
        li {
            a href=(p.link(&format!("/sessions/{}", s(&sn["session_id"])))) { (s(&sn["agent_name"])) }
            " " (render::state(s(&sn["status"])))
            @if !s(&sn["note"]).is_empty() { " " span.muted { "— " (s(&sn["note"])) } }
        }
    }
}

pub async fn page(p: &Ctx<'_>) -> Result<Page, ApiError> {
    let tasks = p.call("list_tasks", json!({ "workspace": p.ws.slug, "limit": 60 })).await?;
    let sessions = p.call("list_sessions", json!({ "workspace": p.ws.slug, "limit": 100 })).await?;
    let sessions = list(&sessions, "sessions");
    let tasks = list(&tasks, "tasks");
    Ok(Page {
        title: "Board".into(),
        nav: "/board",
        main: html! {
            h1 { "Board" }
            div.cards data-live="board" {
                @if tasks.is_empty() { (empty("No tasks yet. Start a session from your MCP client and its task appears here.")) }
                @for t in tasks {
                    @let mine: Vec<&Value> = sessions.iter().filter(|sn| sn["task_id"] == t["task_id"]).collect();
                    @let state = task_state(t, &mine);
                    article.card.task data-task=(s(&t["task_id"])) data-state=(state) {
                        header {
                            h3 { a href=(p.link(&format!("/tasks/{}", s(&t["task_id"])))) { (s(&t["title"])) } }
                            (render::state(state))
                        }
                        ul { @for sn in &mine { (session_line(p, sn)) } }
                        p.muted.small {
                            @match t["sessions"].as_i64().unwrap_or(0) { 1 => "1 session", n => (format!("{n} sessions")) } " · "
                            (spend(t["cost_cents"].as_i64().unwrap_or(0), t["budget_cents"].as_i64())) " · "
                            (time(t["created_ms"].as_i64().unwrap_or(0)))
                        }
                    }
                }
            }
        },
    })
}

pub async fn task(p: &Ctx<'_>, task_id: &str) -> Result<Page, ApiError> {
    let t = p.call("get_task", json!({ "task_id": task_id })).await?;
    let files = p.call("list_task_files", json!({ "task_id": task_id })).await?;
    let artifacts = p.call("list_artifacts", json!({ "task_id": task_id })).await?;
    let sessions: Vec<&Value> = list(&t, "sessions").iter().collect();
    let state = task_state(&t, &sessions);
    let file = p.query("file");
    // A file of a lane (work not landed yet) is read as that session sees it.
    let lane = p.query("session");
    let lane_name = lane.as_ref().and_then(|l| list(&t, "lanes").iter().find(|x| x["session_id"] == l.as_str()));
    let shown = match &file {
        Some(path) => Some(
            p.call("read_task_file", json!({ "task_id": task_id, "path": path, "session_id": lane.as_deref() })).await,
        ),
        None => None,
    };
    let file_link = |path: &str, session: Option<&str>| {
        let mut link = format!("{}?file={}", p.link(&format!("/tasks/{task_id}")), crate::console::forms::encode(path));
        if let Some(sid) = session {
            link.push_str(&format!("&session={}", crate::console::forms::encode(sid)));
        }
        link
    };
    Ok(Page {
        title: s(&t["title"]).to_owned(),
        nav: "/board",
        main: html! {
            h1 { (s(&t["title"])) " " (render::state(state)) }
            p.muted { "Spent " (spend(t["cost_cents"].as_i64().unwrap_or(0), t["budget_cents"].as_i64())) }
            div.split {
                div {
                    h2 { "Sessions" }
                    ul data-live="task-sessions" { @for sn in &sessions { (session_line(p, sn)) } }
                    h2 { "Waiting for you" }
                    section data-live="task-requests" {
                        @if list(&t, "open_requests").is_empty() { p.muted { "Nothing." } }
                        @for r in list(&t, "open_requests") {
                            @let named = with_names(r, &sessions, &t);
                            (render::request(p, &named))
                        }
                    }
                    @if let (Some(path), Some(read)) = (&file, &shown) {
                        h2 { code { (path) }
                            @if let Some(l) = lane_name { " " span.muted.small { "in " (s(&l["agent_name"])) "'s lane, not landed" } } }
                        @match read {
                            Ok(f) => pre { (s(&f["content"])) },
                            Err(e) => p.error { (e.message) },
                        }
                    }
                }
                div {
                    h2 { "Files" }
                    @if list(&files, "files").is_empty() {
                        p.muted { @if list(&t, "lanes").is_empty() { "No files yet." } @else { "None landed yet: see the lanes below." } }
                    }
                    ul { @for f in list(&files, "files") {
                        li { a href=(file_link(s(&f["path"]), None)) { code { (s(&f["path"])) } }
                             " " span.muted.small { "v" (f["version"].as_i64().unwrap_or(0)) " · " (f["size_bytes"].as_i64().unwrap_or(0)) " bytes" } }
                    } }
                    h2 { "Artifacts" }
                    @if list(&artifacts, "artifacts").is_empty() { p.muted { "None published." } }
                    ul { @for a in list(&artifacts, "artifacts") {
                        li {
                            (s(&a["name"])) " " span.muted.small { code { (s(&a["path"])) } " v" (a["version"].as_i64().unwrap_or(0)) }
                            " "
                            @if a["shared"] == true {
                                span.state.running { "shared" } " "
                                (action(p, "share_artifact", &[("artifact_id", s(&a["artifact_id"])), ("enabled", "false")], "Turn link off", "link", None))
                            } @else {
                                (action(p, "share_artifact", &[("artifact_id", s(&a["artifact_id"])), ("enabled", "true")], "Make a link", "link", None))
                            }
                        }
                    } }
                    @if !list(&t, "lanes").is_empty() {
                        h2 { "Lanes" }
                        ul { @for l in list(&t, "lanes") {
                            li { (s(&l["agent_name"])) ": "
                                @if list(l, "changed").is_empty() { span.muted { "nothing unlanded" } }
                                @for c in list(l, "changed") { a href=(file_link(s(c), Some(s(&l["session_id"])))) { code { (s(c)) } } " " } }
                        } }
                    }
                    h2 { "Settings" }
                    @let settings = &t["settings"];
                    form.card method="post" action=(p.link("/op/set_task_settings")) data-settings {
                        (hidden(p)) input type="hidden" name="task_id" value=(task_id);
                        input type="hidden" name="lanes" value="false";
                        label.check { input type="checkbox" name="lanes" value="true" checked[settings["lanes"] == true] disabled[!p.can_write()];
                            " Lanes: each session works in its own copy until it lands" }
                        label { "Review" select name="review" disabled[!p.can_write()] {
                            option value="auto" selected[settings["review"] == "auto"] { "land merges when the checks pass" }
                            option value="manual" selected[settings["review"] == "manual"] { "I review and merge myself" }
                        } }
                        label { "Base branch" input type="text" name="base_branch" maxlength="200" required value=(s(&settings["base_branch"])) disabled[!p.can_write()]; }
                        div.row { button type="submit" disabled[!p.can_write()] { "Save settings" } }
                    }
                    h2 { "Budget" }
                    form.row method="post" action=(p.link("/op/set_task_budget")) {
                        (hidden(p)) input type="hidden" name="task_id" value=(task_id);
                        input type="number" name="budget_cents" min="1" placeholder="cents" aria-label="budget in cents" disabled[!p.can_write()];
                        button type="submit" disabled[!p.can_write()] { "Set budget" }
                    }
                    p.muted.small { "Now " (t["budget_cents"].as_i64().map_or_else(|| "no cap".to_owned(), money)) }
                }
            }
        },
    })
}

/// A task's request with the names a person reads (the task view's requests carry only ids).
fn with_names(r: &Value, sessions: &[&Value], task: &Value) -> Value {
    let mut named = r.clone();
    if let Some(sn) = sessions.iter().find(|sn| sn["session_id"] == r["session_id"]) {
        named["agent_name"] = sn["agent_name"].clone();
        named["session_title"] = sn["title"].clone();
    }
    named["task_title"] = task["title"].clone();
    named
}
