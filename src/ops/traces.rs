//! The trace library: session logs of local agents (Claude Code and Codex `.jsonl` files) uploaded to a
//! workspace, parsed into messages ([`crate::rules::traces`]) and indexed, so `search_context` with
//! `scope: "traces"` finds what happened in them and `read_context` reads a message whole.
//!
//! The upload is a JSON body, `{content, format?, name?}`, where `content` is the file's text: it fits
//! the operation table (one route, one schema, the same errors as every other call) and any HTTP client
//! can send it (`jq -Rs '{content: .}' session.jsonl | curl -d @- …`). The parsed messages go to R2 by
//! hash, their first 16,000 characters each to the index.

use crate::cx::Cx;
use crate::error::{ApiError, Code};
use crate::rules::ids::TraceId;
use crate::rules::params::{words, Int, Text};
use crate::rules::{cursor, ids, traces};
use crate::store::{self, context::TraceRow};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Largest trace accepted, in bytes of `content` (requests themselves stop at 4 MiB, JSON escaping
/// included).
pub const MAX_TRACE_BYTES: usize = 3 * 1024 * 1024;

words! {
    /// The session logs `upload_trace` reads ([`traces::Format::NAMES`]).
    pub enum TraceFormat { ClaudeCode = "claude_code", Codex = "codex" }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UploadTrace {
    /// The session log's whole text, as the tool wrote it: a Claude Code session
    /// (`~/.claude/projects/<project>/<session>.jsonl`) or a Codex rollout
    /// (`~/.codex/sessions/YYYY/MM/DD/rollout-….jsonl`). Up to 3 MiB.
    pub content: String,
    /// `claude_code` or `codex`; told from the lines when left out.
    pub format: Option<TraceFormat>,
    /// A name for the library, up to 200 characters (default: the log's title or first message).
    pub name: Option<Text<1, 200>>,
    /// A workspace slug from `list_workspaces`; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TraceUploaded {
    #[serde(flatten)]
    pub trace: TraceRow,
    /// The workspace's slug.
    pub workspace: String,
    /// False when this very file was already in the library: the existing trace is returned.
    pub created: bool,
}

/// upload_trace
pub async fn upload(cx: &Cx<'_>, p: UploadTrace) -> Result<TraceUploaded, ApiError> {
    if p.content.len() > MAX_TRACE_BYTES {
        return Err(ApiError::new(
            Code::PayloadTooLarge,
            format!(
                "a trace may be at most {MAX_TRACE_BYTES} bytes; this one is {} bytes. Upload one session's log, \
                 or split a long one",
                p.content.len()
            ),
        ));
    }
    let format = p.format.and_then(|f| traces::Format::parse(f.as_str()));
    let w = cx.workspace(p.workspace.as_deref())?.clone();
    let parsed = traces::parse(&p.content, format).map_err(ApiError::invalid)?;
    let name = p.name.map(String::from).or(parsed.title.clone()).unwrap_or_else(|| "trace".into());
    let messages = serde_json::to_vec(&parsed.messages).map_err(ApiError::cause)?;
    let messages_sha256 = hex::encode(Sha256::digest(&messages));
    crate::domain::blobs::put(&*cx.env.blobs, &w.workspace_id, &messages_sha256, messages)
        .await
        .map_err(ApiError::cause)?;
    let started = parsed.started_ms.unwrap_or(cx.now_ms);
    let docs: Vec<store::context::Doc> = parsed
        .messages
        .iter()
        .enumerate()
        .map(|(i, m)| store::context::Doc {
            seq: i as i64,
            role: m.role.clone(),
            // A tool call is found by its tool's name too.
            text: match &m.name {
                Some(tool) => format!("{tool}: {}", m.text),
                None => m.text.clone(),
            },
            at_ms: m.at_ms.unwrap_or(started),
        })
        .collect();
    let trace_id = ids::new_id("trc");
    let new = store::context::NewTrace {
        trace_id: &trace_id,
        workspace_id: &w.workspace_id,
        name: &name,
        format: parsed.format.as_str(),
        message_count: parsed.messages.len() as i64,
        size_bytes: p.content.len() as i64,
        content_sha256: &hex::encode(Sha256::digest(p.content.as_bytes())),
        messages_sha256: &messages_sha256,
        started_ms: parsed.started_ms,
        key_id: Some(&cx.caller()?.key_id),
        now_ms: cx.now_ms,
    };
    let trace = store::context::insert_trace(cx.db(), &new, &docs)
        .await?
        .ok_or_else(|| ApiError::cause("the trace vanished after its upload"))?;
    Ok(TraceUploaded { created: trace.trace_id == trace_id, trace, workspace: w.slug })
}

/// One parsed message of a trace, from R2.
pub async fn message(cx: &Cx<'_>, trace: &TraceRow, index: i64) -> Result<Option<traces::TraceMessage>, ApiError> {
    let bytes = crate::domain::blobs::get(&*cx.env.blobs, &trace.workspace_id, &trace.messages_sha256)
        .await
        .map_err(ApiError::cause)?;
    let Some(bytes) = bytes else { return Ok(None) };
    let mut messages: Vec<traces::TraceMessage> = serde_json::from_slice(&bytes).map_err(ApiError::cause)?;
    Ok(usize::try_from(index).ok().filter(|&i| i < messages.len()).map(|i| messages.swap_remove(i)))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListTraces {
    /// A workspace slug from `list_workspaces`; the connection's workspace when left out.
    pub workspace: Option<String>,
    /// Page size (default 50).
    pub limit: Option<Int<1, 200>>,
    /// `next_cursor` from the previous page.
    pub cursor: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TraceList {
    pub workspace: String,
    /// Newest first.
    pub traces: Vec<TraceRow>,
    /// Pass as `cursor` for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// list_traces
pub async fn list(cx: &Cx<'_>, p: ListTraces) -> Result<TraceList, ApiError> {
    let limit = p.limit.map_or(50, Int::get);
    let before = cursor::parse_keyset(p.cursor.as_deref())?;
    let w = cx.workspace(p.workspace.as_deref())?;
    let mut traces = store::context::traces(cx.db(), &w.workspace_id, before, limit + 1).await?;
    let next_cursor = (traces.len() as i64 > limit).then(|| {
        traces.truncate(limit as usize);
        let last = traces.last().expect("a full page has a last row");
        cursor::keyset(last.created_ms, &last.trace_id)
    });
    Ok(TraceList { workspace: w.slug.clone(), traces, next_cursor })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteTrace {
    /// The trace (`trc_…`).
    pub trace_id: TraceId,
    /// Ignored: the workspace is the trace's.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TraceDeleted {
    pub trace_id: String,
    pub deleted: bool,
}

/// delete_trace
pub async fn delete(cx: &Cx<'_>, p: DeleteTrace) -> Result<TraceDeleted, ApiError> {
    let not_found = || ApiError::new(Code::NotFound, format!("trace `{}` not found", p.trace_id));
    let trace = store::context::trace(cx.db(), &p.trace_id).await?.ok_or_else(not_found)?;
    cx.member_of(&trace.workspace_id, &format!("trace `{}`", p.trace_id))?;
    let deleted = store::context::delete_trace(cx.db(), &p.trace_id, &trace.workspace_id).await?;
    if deleted {
        // Its parsed messages go too, unless something else of the workspace has the same bytes.
        crate::domain::blobs::forget(cx, &trace.workspace_id, &trace.messages_sha256).await.map_err(ApiError::cause)?;
    }
    Ok(TraceDeleted { trace_id: p.trace_id.into(), deleted })
}
