//! What `/v1/mcp` offers as MCP resources: Help Center articles, a task's files, artifacts, and a session's
//! transcript (Markdown) and result. Each template is one row of [`TEMPLATES`]; each read goes through the
//! operation that reads the same thing (`help_get`, `read_task_file`, `read_session`, `collect_result`),
//! so scopes, workspace rules and rate limits are exactly the tools'. What the caller may not see reads as
//! missing, never as forbidden, so a resource URI tells nobody what another workspace holds.
//!
//! `resources/list` lists the Help Center only: it is static, costs no storage read and is the same for
//! everyone. The caller's own tasks, files and sessions are reached through the templates, whose variables
//! `completion/complete` fills in ([`super::completions`]).

use crate::cx::Cx;
use crate::error::{ApiError, Code};
use crate::mcp::features::{match_template, ReadFailure};
use crate::mcp::RpcError;
use crate::ops::{self, help_center};
use serde_json::{json, Value};

/// What a template reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Help,
    TaskFile,
    Artifact,
    Transcript,
    Result,
}

/// One resource template: its URI template, name, title, description and MIME type.
pub struct Template {
    pub kind: Kind,
    pub uri: &'static str,
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub mime: &'static str,
}

/// Every template, in the order `resources/templates/list` shows them.
pub const TEMPLATES: &[Template] = &[
    Template {
        kind: Kind::Help,
        uri: "agentsky://help/{lang}/{slug}",
        name: "help_article",
        title: "Help Center article",
        description: "A Help Center article in Markdown; `lang` is `en` or `zh`, `slug` the English slug.",
        mime: "text/markdown",
    },
    Template {
        kind: Kind::TaskFile,
        uri: "agentsky://tasks/{task_id}/files/{path}",
        name: "task_file",
        title: "Task file",
        description: "The newest version of a file in a task's shared folder; `path` may contain `/`.",
        mime: "text/plain",
    },
    Template {
        kind: Kind::Artifact,
        uri: "agentsky://artifacts/{artifact_id}",
        name: "artifact",
        title: "Artifact",
        description: "A published artifact: the snapshot of the task file it was published from.",
        mime: "text/plain",
    },
    Template {
        kind: Kind::Transcript,
        uri: "agentsky://sessions/{session_id}/transcript",
        name: "session_transcript",
        title: "Session transcript",
        description: "A session's conversation as Markdown: messages, tool calls and errors, oldest first.",
        mime: "text/markdown",
    },
    Template {
        kind: Kind::Result,
        uri: "agentsky://sessions/{session_id}/result",
        name: "session_result",
        title: "Session result",
        description: "What a session produced (`collect_result`): its last reply, the files it wrote, its spend.",
        mime: "application/json",
    },
];

/// Pages of 200 events a transcript reads at most; past that it says where `read_session` continues.
const TRANSCRIPT_PAGES: usize = 10;

pub fn template(kind: Kind) -> &'static Template {
    TEMPLATES.iter().find(|t| t.kind == kind).expect("every kind has a template")
}

pub fn find_template(uri: &str) -> Option<&'static Template> {
    TEMPLATES.iter().find(|t| t.uri == uri)
}

/// The `resources/templates/list` entries.
pub fn template_entries() -> Vec<Value> {
    TEMPLATES
        .iter()
        .map(|t| {
            json!({"uriTemplate": t.uri, "name": t.name, "title": t.title, "description": t.description, "mimeType": t.mime})
        })
        .collect()
}

/// A help article's URI: the English slug under its language.
pub fn help_uri(article: &help_center::Article) -> String {
    let slug = article.slug.strip_prefix("zh-").filter(|_| article.lang == "zh").unwrap_or(article.slug);
    format!("agentsky://help/{}/{slug}", article.lang)
}

/// The `resources/list` entries: every Help Center article, in reading order.
pub fn list() -> Vec<Value> {
    help_center::ARTICLES
        .iter()
        .map(|a| {
            json!({
                "uri": help_uri(a), "name": a.slug, "title": a.title(), "description": a.summary(),
                "mimeType": "text/markdown", "annotations": {"audience": ["user", "assistant"]}
            })
        })
        .collect()
}

/// `resources/read`.
pub async fn read(cx: &Cx<'_>, uri: &str) -> Result<Vec<Value>, ReadFailure> {
    let (t, vars) =
        TEMPLATES.iter().find_map(|t| match_template(t.uri, uri).map(|v| (t, v))).ok_or(ReadFailure::NotFound)?;
    let var = |name: &str| vars.get(name).and_then(Value::as_str).unwrap_or_default().to_owned();
    let text = |mime: &str, text: String| vec![json!({"uri": uri, "mimeType": mime, "text": text})];
    match t.kind {
        Kind::Help => {
            let slug = match var("lang").as_str() {
                // A Chinese article is read under `zh`, by its English twin's slug.
                "en" if !var("slug").starts_with("zh-") => var("slug"),
                "zh" => format!("zh-{}", var("slug")),
                _ => return Err(ReadFailure::NotFound),
            };
            let article = run(cx, "help_get", json!({"slug": slug})).await?;
            Ok(text(t.mime, article["markdown"].as_str().unwrap_or_default().to_owned()))
        }
        Kind::TaskFile => {
            let path = var("path");
            let file = run(cx, "read_task_file", json!({"task_id": var("task_id"), "path": path})).await?;
            Ok(text(mime_of(&path), file["content"].as_str().unwrap_or_default().to_owned()))
        }
        Kind::Artifact => {
            let id = var("artifact_id");
            // The row says which task file and version it snapshots; reading that file applies the task's
            // workspace rules, so another workspace's artifact reads as missing.
            let row = crate::store::artifacts::get(cx.db(), &id).await;
            let row = row.map_err(|e| refusal(&ApiError::from(e).finish(&cx.request_id)))?;
            let row = row.ok_or(ReadFailure::NotFound)?;
            let args = json!({"task_id": row.task_id, "path": row.path, "version": row.version});
            let file = run(cx, "read_task_file", args).await?;
            Ok(text(&row.content_type, file["content"].as_str().unwrap_or_default().to_owned()))
        }
        Kind::Transcript => Ok(text(t.mime, transcript(cx, &var("session_id")).await?)),
        Kind::Result => {
            let result = run(cx, "collect_result", json!({"session_id": var("session_id")})).await?;
            Ok(text(t.mime, serde_json::to_string_pretty(&result).unwrap_or_default()))
        }
    }
}

/// A session's events as Markdown, read page by page through `read_session`.
async fn transcript(cx: &Cx<'_>, session_id: &str) -> Result<String, ReadFailure> {
    let info = run(cx, "get_session", json!({"session_id": session_id})).await?;
    let session = &info["session"];
    let mut md = format!(
        "# Session {session_id}\n\nAgent: {} · model {} · status {} · task {}\n",
        session["agent_name"].as_str().unwrap_or_default(),
        session["model"].as_str().unwrap_or_default(),
        session["status"].as_str().unwrap_or_default(),
        session["task_id"].as_str().unwrap_or_default(),
    );
    let mut cursor = Value::Null;
    for page in 0..TRANSCRIPT_PAGES {
        let mut args = json!({"session_id": session_id, "limit": 200});
        if !cursor.is_null() {
            args["cursor"] = cursor.clone();
        }
        let read = run(cx, "read_session", args).await?;
        for event in read["events"].as_array().into_iter().flatten() {
            md.push_str(&event_markdown(event));
        }
        cursor = read["cursor"].clone();
        if read["has_more"] != json!(true) {
            break;
        }
        if page + 1 == TRANSCRIPT_PAGES {
            md.push_str(&format!("\n_More follows: call `read_session` with cursor `{}`._\n", cursor_text(&cursor)));
        }
    }
    Ok(md)
}

/// Task files are text; their extension says which kind.
fn mime_of(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, ext)| ext.to_ascii_lowercase()).as_deref() {
        Some("md" | "markdown") => "text/markdown",
        Some("json") => "application/json",
        Some("html" | "htm") => "text/html",
        Some("csv") => "text/csv",
        _ => "text/plain",
    }
}

fn cursor_text(cursor: &Value) -> &str {
    cursor.as_str().unwrap_or_default()
}

/// One event as a Markdown section; status changes and turn marks are left out.
fn event_markdown(event: &Value) -> String {
    let text = |key: &str| event[key].as_str().unwrap_or_default().to_owned();
    match event["type"].as_str().unwrap_or_default() {
        "user_message" => format!("\n## {}\n\n{}\n", ops::sharing::author(&event["from"]), text("text")),
        "agent_message" => format!("\n## agent\n\n{}\n", text("text")),
        "tool_call" => format!("\n**tool call** `{}` `{}`\n", text("name"), event["arguments"]),
        "tool_result" => {
            let output = event.get("output").or(event.get("result")).cloned().unwrap_or(Value::Null);
            let shown = match output {
                Value::String(s) => s,
                other => other.to_string(),
            };
            let shown: String = shown.chars().take(2000).collect();
            format!("\n**tool result** `{}`\n\n```\n{}\n```\n", text("name"), shown.replace("```", "'''"))
        }
        "error" => format!("\n**error** {}\n", text("message")),
        _ => String::new(),
    }
}

/// Runs one operation by name, as the caller: its scope check, rate limit and workspace rules apply.
async fn run(cx: &Cx<'_>, name: &str, args: Value) -> Result<Value, ReadFailure> {
    let op = ops::find(name).expect("resources read through operations of the table");
    ops::invoke(cx, op, args).await.map_err(|e| refusal(&e))
}

/// Missing, forbidden and malformed all read as "not found"; anything else (a rate limit, a read-only
/// key's refusal, an internal failure) is answered with the API's error body.
fn refusal(e: &ApiError) -> ReadFailure {
    match e.code {
        Code::NotFound | Code::Forbidden | Code::InvalidParams => ReadFailure::NotFound,
        _ => ReadFailure::Refused(api_error(e)),
    }
}

/// An operation's failure as a JSON-RPC error: the server-error number, the API's body as `data`.
pub fn api_error(e: &ApiError) -> RpcError {
    RpcError::new(-32000, e.message.clone()).with_data(e.body())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_one_template_and_help_uris_match_theirs() {
        for kind in [Kind::Help, Kind::TaskFile, Kind::Artifact, Kind::Transcript, Kind::Result] {
            assert_eq!(TEMPLATES.iter().filter(|t| t.kind == kind).count(), 1);
        }
        for entry in list() {
            let uri = entry["uri"].as_str().unwrap();
            assert!(match_template(template(Kind::Help).uri, uri).is_some(), "{uri}");
        }
        assert!(list().iter().any(|e| e["uri"] == "agentsky://help/zh/getting-started"));
    }

    #[test]
    fn transcript_events_render_as_markdown() {
        let said = event_markdown(&json!({"type": "agent_message", "text": "done"}));
        assert_eq!(said, "\n## agent\n\ndone\n");
        assert_eq!(event_markdown(&json!({"type": "status"})), "");
    }
}
