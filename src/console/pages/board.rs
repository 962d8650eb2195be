//! The board: tasks as cards (what each was asked, its sessions and agents with the status line each set,
//! whether it runs, waits for you, idles or is done, and its spend against budget), and a task's page:
//! its sessions, requests, files, artifacts and lanes.

use super::{empty, Page};
use crate::console::layout::{action, hidden, money, time};
use crate::console::render::{self, spend};
use crate::console::Ctx;
use crate::error::ApiError;
use crate::ops::call;
use crate::ops::files::{ListTaskFiles, ReadTaskFile};
use crate::ops::name;
use crate::ops::sessions::ListSessions;
use crate::ops::sharing::ListArtifacts;
use crate::ops::tasks::{GetTask, ListTasks, TaskDetail};
use crate::rules::params::{param, Int};
use crate::store::requests::{OpenRequest, RequestRow};
use crate::store::sessions::{SessionRow, SessionStatus};
use maud::{html, Markup};

/// The word a person reads for a task: requests first (someone waits for them), then running work.
fn task_state(requests_open: bool, running: i64, sessions: &[&SessionRow]) -> &'static str {
    if requests_open {
        "waiting for you"
    } else if running > 0 {
        "running"
    } else if !sessions.is_empty() && sessions.iter().all(|s| s.status == SessionStatus::Terminated) {
        "done"
    } else {
        "idle"
    }
}

fn session_line(p: &Ctx<'_>, sn: &SessionRow) -> Markup {
    html! {
        li {
            a href=(p.link(&format!("/sessions/{}", sn.session_id))) { (sn.agent_name) }
            " " (render::state(sn.status.as_str()))
            @if !sn.note.is_empty() { " " span.muted { "— " (sn.note) } }
        }
    }
}

pub async fn page(p: &Ctx<'_>) -> Result<Page, ApiError> {
    let workspace = Some(p.ws.slug.clone());
    let listed = ListTasks { workspace: workspace.clone(), limit: Some(const { Int::new(60) }), cursor: None };
    let tasks = call::list_tasks(p.cx, listed).await?.tasks;
    let listed = ListSessions { workspace, limit: Some(const { Int::new(100) }), cursor: None, agent_id: None };
    let sessions = call::list_sessions(p.cx, listed).await?.sessions;
    Ok(Page {
        title: "Board".into(),
        nav: "/board",
        main: html! {
            h1 { "Board" }
            div.cards data-live="board" {
                @if tasks.is_empty() { (empty("No tasks yet. Start a session from your MCP client and its task appears here.")) }
                @for t in tasks.iter().map(|t| &t.task) {
                    @let mine: Vec<&SessionRow> = sessions.iter().filter(|sn| sn.task_id == t.task_id).collect();
                    @let state = task_state(t.open_requests > 0, t.running, &mine);
                    article.card.task data-task=(t.task_id) data-state=(state) {
                        header {
                            h3 { a href=(p.link(&format!("/tasks/{}", t.task_id))) { (t.title) } }
                            (render::state(state))
                        }
                        ul { @for sn in &mine { (session_line(p, sn)) } }
                        p.muted.small {
                            @match t.sessions { 1 => "1 session", n => (format!("{n} sessions")) } " · "
                            (spend(t.cost_cents, t.budget_cents)) " · "
                            (time(t.created_ms))
                        }
                    }
                }
            }
        },
    })
}

pub async fn task(p: &Ctx<'_>, task_id: &str) -> Result<Page, ApiError> {
    let id = || param("task_id", task_id);
    let t = call::get_task(p.cx, GetTask { task_id: id()?, workspace: None }).await?;
    let listed = ListTaskFiles { task_id: id()?, limit: None, cursor: None, session_id: None, workspace: None };
    let files = call::list_task_files(p.cx, listed).await?.files;
    let listed = ListArtifacts { task_id: Some(id()?), workspace: None, limit: None };
    let artifacts = call::list_artifacts(p.cx, listed).await?.artifacts;
    let sessions: Vec<&SessionRow> = t.sessions.iter().collect();
    let state = task_state(!t.open_requests.is_empty(), t.running, &sessions);
    let file = p.query("file");
    // A file of a lane (work not landed yet) is read as that session sees it.
    let lane = p.query("session");
    let lane_name = lane.as_ref().and_then(|l| t.lanes.iter().find(|x| x.session_id == *l));
    let shown = match &file {
        Some(path) => Some(
            async {
                let session_id = lane.as_deref().map(|l| param("session_id", l)).transpose()?;
                let read = ReadTaskFile {
                    task_id: id()?,
                    path: param("path", path)?,
                    version: None,
                    session_id,
                    workspace: None,
                };
                call::read_task_file(p.cx, read).await
            }
            .await,
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
        title: t.title.clone(),
        nav: "/board",
        main: html! {
            h1 { (t.title) " " (render::state(state)) }
            p.muted { "Spent " (spend(t.cost_cents, t.budget_cents)) }
            div.split {
                div {
                    h2 { "Sessions" }
                    ul data-live="task-sessions" { @for sn in &sessions { (session_line(p, sn)) } }
                    h2 { "Waiting for you" }
                    section data-live="task-requests" {
                        @if t.open_requests.is_empty() { p.muted { "Nothing." } }
                        @for r in &t.open_requests {
                            @let named = with_names(r, &t);
                            (render::request(p, &named))
                        }
                    }
                    @if let (Some(path), Some(read)) = (&file, &shown) {
                        h2 { code { (path) }
                            @if let Some(l) = lane_name { " " span.muted.small { "in " (l.agent_name) "'s lane, not landed" } } }
                        @match read {
                            Ok(f) => pre { (f.content) },
                            Err(e) => p.error { (e.message) },
                        }
                    }
                }
                div {
                    h2 { "Files" }
                    @if files.is_empty() {
                        p.muted { @if t.lanes.is_empty() { "No files yet." } @else { "None landed yet: see the lanes below." } }
                    }
                    ul { @for f in &files {
                        li { a href=(file_link(&f.path, None)) { code { (f.path) } }
                             " " span.muted.small { "v" (f.version) " · " (f.size_bytes) " bytes" } }
                    } }
                    h2 { "Artifacts" }
                    @if artifacts.is_empty() { p.muted { "None published." } }
                    ul { @for a in &artifacts {
                        li {
                            (a.name) " " span.muted.small { code { (a.path) } " v" (a.version) }
                            " "
                            @if a.shared {
                                span.state.running { "shared" } " "
                                (action(p, name::share_artifact, &[("artifact_id", &a.artifact_id), ("enabled", "false")], "Turn link off", "link", None))
                            } @else {
                                (action(p, name::share_artifact, &[("artifact_id", &a.artifact_id), ("enabled", "true")], "Make a link", "link", None))
                            }
                        }
                    } }
                    @if !t.lanes.is_empty() {
                        h2 { "Lanes" }
                        ul { @for l in &t.lanes {
                            li { (l.agent_name) ": "
                                @if l.changed.is_empty() { span.muted { "nothing unlanded" } }
                                @for c in &l.changed { a href=(file_link(c, Some(&l.session_id))) { code { (c) } } " " } }
                        } }
                    }
                    h2 { "Settings" }
                    @let settings = &t.settings;
                    form.card method="post" action=(p.action_url(name::set_task_settings)) data-settings {
                        (hidden(p)) input type="hidden" name="task_id" value=(task_id);
                        input type="hidden" name="lanes" value="false";
                        label.check { input type="checkbox" name="lanes" value="true" checked[settings.lanes] disabled[!p.can_write()];
                            " Lanes: each session works in its own copy until it lands" }
                        label { "Review" select name="review" disabled[!p.can_write()] {
                            option value="auto" selected[settings.review == "auto"] { "land merges when the checks pass" }
                            option value="manual" selected[settings.review == "manual"] { "I review and merge myself" }
                        } }
                        label { "Base branch" input type="text" name="base_branch" maxlength="200" required value=(settings.base_branch) disabled[!p.can_write()]; }
                        div.row { button type="submit" disabled[!p.can_write()] { "Save settings" } }
                    }
                    h2 { "Budget" }
                    form.row method="post" action=(p.action_url(name::set_task_budget)) {
                        (hidden(p)) input type="hidden" name="task_id" value=(task_id);
                        input type="number" name="budget_cents" min="1" placeholder="cents" aria-label="budget in cents" disabled[!p.can_write()];
                        button type="submit" disabled[!p.can_write()] { "Set budget" }
                    }
                    p.muted.small { "Now " (t.budget_cents.map_or_else(|| "no cap".to_owned(), money)) }
                }
            }
        },
    })
}

/// A task's request with the names a person reads (the task view's requests carry only ids).
fn with_names(r: &RequestRow, task: &TaskDetail) -> OpenRequest {
    let session = task.sessions.iter().find(|sn| sn.session_id == r.session_id);
    OpenRequest {
        request: r.clone(),
        agent_name: session.map(|sn| sn.agent_name.clone()).unwrap_or_default(),
        agent_id: session.map(|sn| sn.agent_id.clone()).unwrap_or_default(),
        session_title: session.map(|sn| sn.title.clone()).unwrap_or_default(),
        task_title: task.title.clone(),
        would_allow: None,
        approved_by: Vec::new(),
    }
}
