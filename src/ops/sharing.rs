//! Published results and public links: artifacts (snapshots of task files) and session share links.
//! A link is an unguessable 256-bit token, stored only as its hash; turning a link off (or sharing again,
//! which makes a new link) makes the old one 404 at once.

use crate::cx::{Cx, Env};
use crate::domain::taskfs::{self, Folder, TaskPath};
use crate::error::{ApiError, Code};
use crate::http::HttpResponse;
use crate::ops::transcript::{entry, Entry};
use crate::ops::{
    files::{self, load_task},
    sessions,
};
use crate::rules::html::escape;
use crate::rules::ids::{ArtifactId, SessionId, TaskId};
use crate::rules::params::{Int, Text};
use crate::rules::{ids, paths};
use crate::session::calls;
use crate::store::{self, artifacts::ArtifactRow};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A fresh link token and the hash kept of it.
fn new_link() -> (String, String) {
    let token = ids::new_secret("");
    let hash = ids::hash_secret(&token);
    (token, hash)
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArtifacts {
    /// Only this task's artifacts (workspace derived from it).
    pub task_id: Option<TaskId>,
    /// A workspace slug from `list_workspaces`; the connection's workspace when left out.
    pub workspace: Option<String>,
    /// Page size, 1–200 (default 50).
    pub limit: Option<Int<1, 200>>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ArtifactList {
    /// Newest first.
    pub artifacts: Vec<ArtifactRow>,
}

/// list_artifacts
pub async fn list(cx: &Cx<'_>, p: ListArtifacts) -> Result<ArtifactList, ApiError> {
    let limit = p.limit.map_or(50, Int::get);
    let workspace_id = match &p.task_id {
        Some(task) => load_task(cx, task).await?.workspace_id,
        None => cx.workspace(p.workspace.as_deref())?.workspace_id.clone(),
    };
    let artifacts = store::artifacts::list(cx.db(), &workspace_id, p.task_id.as_deref(), limit).await?;
    Ok(ArtifactList { artifacts })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PublishArtifact {
    /// The task (its first session's id).
    pub task_id: TaskId,
    /// The task file to publish, e.g. `report.html`; its current version is snapshotted.
    pub path: TaskPath,
    /// A display name (default: the file's name), up to 200 characters.
    pub name: Option<Text<1, 200>>,
    /// Publish this version of the file instead of the latest.
    pub version: Option<i64>,
    /// One of the task's sessions: publish the file as it sees it, with the work it has not landed yet.
    /// The task's base when left out.
    pub session_id: Option<SessionId>,
    /// Ignored: the workspace is the task's.
    pub workspace: Option<String>,
}

/// publish_artifact
pub async fn publish(cx: &Cx<'_>, p: PublishArtifact) -> Result<ArtifactRow, ApiError> {
    let path = p.path.as_str().to_owned();
    let m = load_task(cx, &p.task_id).await?;
    let lane = files::lane_read(cx, &p.task_id, p.session_id.as_deref()).await?;
    let folder = Folder { workspace_id: &m.workspace_id, task_id: &p.task_id, lane: &lane };
    let found = taskfs::shown(cx.db(), folder, &path, p.version).await?;
    // A tombstone (the file was deleted at that version) is no file to publish.
    let Some(file) = found.filter(|f| !f.deleted) else {
        let missing = ApiError::new(Code::NotFound, format!("no file `{path}` in this task; call list_task_files"));
        return Err(match lane.is_empty() {
            true => files::not_landed(cx, &p.task_id, &p.path, missing).await?,
            false => missing,
        });
    };
    let name = p.name.map_or_else(|| path.rsplit('/').next().unwrap_or(&path).to_owned(), String::from);
    let key_id = cx.caller()?.key_id.clone();
    store::artifacts::insert(
        cx.db(),
        &store::artifacts::NewArtifact {
            artifact_id: &ids::new_id("art"),
            workspace_id: &m.workspace_id,
            task_id: &p.task_id,
            name: &name,
            path: &file.path,
            version: file.version,
            content_type: paths::content_type(&file.path),
            size_bytes: file.size_bytes,
            sha256: &file.sha256,
            key_id: &key_id,
            now_ms: cx.now_ms,
        },
    )
    .await
    .map_err(ApiError::from)
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShareArtifact {
    /// The artifact (`art_…`).
    pub artifact_id: ArtifactId,
    /// `true` (default) makes a new public link (an older one stops working); `false` turns it off.
    pub enabled: Option<bool>,
    /// Ignored: the workspace is the artifact's.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ArtifactShared {
    pub artifact_id: String,
    /// The public link, anyone with it can open the artifact without a key; `null` when off.
    pub share_url: Option<String>,
}

/// share_artifact
pub async fn share(cx: &Cx<'_>, p: ShareArtifact) -> Result<ArtifactShared, ApiError> {
    let a = store::artifacts::get(cx.db(), &p.artifact_id).await?.ok_or_else(|| ApiError::not_found("artifact"))?;
    cx.member_of(&a.workspace_id, "artifact")?;
    let (url, hash) = match p.enabled.unwrap_or(true) {
        true => {
            let (token, hash) = new_link();
            (Some(format!("{}/a/{token}", cx.link_base()?)), Some(hash))
        }
        false => (None, None),
    };
    store::artifacts::set_share(cx.db(), &a.artifact_id, hash.as_deref()).await?;
    Ok(ArtifactShared { artifact_id: a.artifact_id, share_url: url })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShareSession {
    /// The session (`ses_…`).
    pub session_id: SessionId,
    /// `true` (default) makes a new share link (an older one stops working); `false` turns it off.
    pub enabled: Option<bool>,
    /// `true` for a read-only link; otherwise the link's holder may also send messages.
    pub view_only: Option<bool>,
    /// Ignored: the workspace is the session's.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SessionShared {
    pub session_id: String,
    /// The link to the transcript as a web page; `null` when off.
    pub share_url: Option<String>,
    pub view_only: bool,
}

/// share_session
pub async fn share_session(cx: &Cx<'_>, p: ShareSession) -> Result<SessionShared, ApiError> {
    let (row, _) = sessions::load(cx, &p.session_id).await?;
    let view_only = p.view_only.unwrap_or(false);
    if p.enabled.unwrap_or(true) && !view_only {
        // A link that sends messages acts in the workspace, and would outlive an app's disconnection.
        super::not_an_app(cx.caller()?, "A share link that can send messages (`view_only: false`)")?;
    }
    let (url, hash) = match p.enabled.unwrap_or(true) {
        true => {
            let (token, hash) = new_link();
            (Some(format!("{}/s/{token}", cx.link_base()?)), Some(hash))
        }
        false => (None, None),
    };
    store::artifacts::set_session_share(cx.db(), &row.session_id, hash.as_deref(), view_only).await?;
    Ok(SessionShared { session_id: row.session_id, share_url: url, view_only })
}

/// A short answer in plain text, with the page headers.
fn plain(status: u16, text: impl Into<Vec<u8>>) -> HttpResponse {
    HttpResponse::page(status, "text/plain; charset=utf-8", "default-src 'none'", text)
}

fn not_found_page() -> HttpResponse {
    plain(404, "This link does not exist or was turned off.\n")
}

/// `GET /a/{token}`: the artifact's bytes with its content type, sandboxed so a published page can never
/// act as this origin.
pub async fn serve_artifact(env: &Env, token: &str) -> HttpResponse {
    let db: &dyn store::Sql = &env.db;
    let Ok(Some(a)) = store::artifacts::by_share(db, &ids::hash_secret(token)).await else { return not_found_page() };
    match crate::domain::blobs::get(&*env.blobs, &a.workspace_id, &a.sha256).await {
        // `sandbox`: a published page can never act as this origin.
        Ok(Some(bytes)) => HttpResponse::page(200, &a.content_type, "sandbox", bytes),
        _ => not_found_page(),
    }
}

/// `GET /s/{token}`: the session's transcript as a readable page.
pub async fn serve_session(env: &Env, token: &str) -> HttpResponse {
    let db: &dyn store::Sql = &env.db;
    let Ok(Some(s)) = store::artifacts::session_by_share(db, &ids::hash_secret(token)).await else {
        return not_found_page();
    };
    let mut rows = String::new();
    let mut after = 0;
    for _ in 0..25 {
        let call = calls::Read { after, message_id: None, limit: 200, wait_ms: 0 };
        let Ok(Ok(page)) = env.sessions.ask(&s.session_id, call).await else { break };
        for e in &page.events {
            let (who, text) = match entry(e) {
                Some(Entry::Said { who, text }) => (who, text.to_owned()),
                Some(Entry::ToolCall { name, arguments }) => ("tool", format!("{name} {arguments}")),
                Some(Entry::Error { message }) => ("error", message.to_owned()),
                Some(Entry::ToolResult { .. }) | None => continue,
            };
            rows.push_str(&format!("<div class=\"m {who}\"><b>{who}</b><pre>{}</pre></div>\n", escape(&text)));
        }
        after = page.last_seq;
        if !page.has_more {
            break;
        }
    }
    let form = if s.share_view_only {
        String::new()
    } else {
        "<form method=\"post\"><textarea name=\"message\" rows=\"3\" cols=\"80\" required></textarea><br><button>Send</button></form>".to_owned()
    };
    let html = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{title}</title><meta name=\"viewport\" content=\"width=device-width\">\
<style>body{{font:15px system-ui;max-width:52rem;margin:2rem auto;padding:0 1rem}}.m{{border-left:3px solid #ccc;padding:.2rem .8rem;margin:.8rem 0}}\
.agent{{border-color:#36c}}.error{{border-color:#c33}}pre{{white-space:pre-wrap;font:inherit;margin:.2rem 0}}</style></head>\
<body><h1>{title}</h1><p>{agent} · {status} · shared from agentsky</p>{rows}{form}</body></html>",
        title = escape(&s.title),
        agent = escape(&s.agent_name),
        status = escape(&s.status),
    );
    HttpResponse::page(
        200,
        "text/html; charset=utf-8",
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
        html,
    )
}

/// `POST /s/{token}`: a message from the holder of an interactive share link.
pub async fn post_to_session(cx: &Cx<'_>, token: &str, body: &[u8]) -> HttpResponse {
    let Ok(Some(s)) = store::artifacts::session_by_share(cx.db(), &ids::hash_secret(token)).await else {
        return not_found_page();
    };
    if s.share_view_only {
        return plain(403, "This link is read-only.\n");
    }
    let text = String::from_utf8_lossy(body);
    let message = crate::http::form_value(&text, "message").unwrap_or_default();
    // The rule of `send_message`'s `message`.
    let message = match Text::<1, 64_000>::try_from(message) {
        Ok(m) => m,
        Err(problem) => return plain(400, format!("`message` {problem}")),
    };
    let msg = crate::session::NewMessage {
        message_id: ids::new_id("msg"),
        text: message.into_string(),
        from: crate::session::Author::ShareLink,
    };
    match sessions::call(cx, &s.session_id, calls::Send { message: msg }).await {
        Ok(_) => HttpResponse::new(303).with_header("location", format!("/s/{token}")),
        Err(e) => plain(e.code.http(), e.message),
    }
}
