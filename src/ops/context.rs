//! Search and context (contract: `search_context`, `read_context`): one full-text index (FTS5 in D1, see
//! `migrations/0008_context_records_help.sql` and [`crate::rules::fulltext`]) over the caller's saved
//! memory, the messages of the sessions in their workspaces, and the workspace's trace library.
//!
//! Conversations reach the index from two sides:
//! - when a turn ends, the session's step (`turns::driver::step`) calls [`index::index_turn`] with the object's
//!   own log, which copies the messages since the session's watermark — the index is current without
//!   asking any object at search time;
//! - a search's first page first catches up a few sessions whose index is older than their `updated_ms`
//!   (a turn stopped midway, a peer's note, sessions that ran before the index existed), reading their
//!   logs from their objects. Whatever the hook missed is found by the next search.
//!
//! Both are idempotent (one row per session and event sequence number), so they may race.

use crate::cx::Cx;
use crate::domain::index;
use crate::error::{ApiError, Code};
use crate::ops::sessions;
use crate::rules::params::{words, Int, Text};
use crate::rules::{fingerprint, fulltext, ids};
use crate::session::calls;
use crate::store;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

words! {
    /// What `search_context` searches.
    pub enum SearchScope { Memory = "memory", Conversations = "conversations", Traces = "traces" }
}
/// Characters of a snippet.
const SNIPPET_CHARS: usize = 240;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchContext {
    /// Words or a `"quoted phrase"`, in any language.
    pub query: Text<1, 500>,
    /// `memory`, `conversations` (past sessions) or `traces` (uploaded local sessions); default: the
    /// first two.
    pub scope: Option<SearchScope>,
    /// `nextCursor` of the previous page, with the same query.
    pub cursor: Option<String>,
    /// Hits per page (default 10).
    pub limit: Option<Int<1, 50>>,
    /// A workspace slug from `list_workspaces`. For `traces`, whose library to search (default: the
    /// connection's workspace); for memory and conversations, only that workspace (default: every
    /// workspace you belong to).
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ContextHits {
    /// Best first.
    pub hits: Vec<ContextHit>,
    /// Pass as `cursor` for the next page; absent on the last page.
    #[serde(rename = "nextCursor", skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ContextHit {
    /// Pass unchanged to `read_context` to read the whole entry or message.
    #[serde(rename = "ref")]
    pub reference: String,
    /// `memory`, `conversations` or `traces`.
    pub scope: String,
    /// The session's title, the trace's name, or the memory entry's first line.
    pub title: String,
    /// Who wrote it: `memory`; `user`, `agent`, `peer`, `routine` or `goal` in a session; `user`,
    /// `assistant`, `tool_call` or `tool_result` in a trace.
    pub role: String,
    /// The passage that matches best, with the matching words in `**`.
    pub snippet: String,
    /// The whole entry's or message's length in characters (`read_context` pages through it).
    pub chars: i64,
    pub at_ms: i64,
    /// The workspace's slug.
    pub workspace: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

/// What a hit's `ref` names.
#[derive(Debug, Clone, PartialEq)]
enum Ref {
    Memory(String),
    Message { session_id: String, seq: i64 },
    Trace { trace_id: String, index: i64 },
}

impl Ref {
    fn of(scope: &str, source_id: &str, seq: i64) -> String {
        match scope {
            "memory" => format!("memory/{source_id}"),
            _ => format!("{scope}/{source_id}/{seq}"),
        }
    }

    fn parse(s: &str) -> Option<Self> {
        let parts: Vec<&str> = s.split('/').collect();
        let number = |n: &str| n.parse::<i64>().ok().filter(|n| *n >= 0);
        match parts.as_slice() {
            ["memory", id] if ids::is_id(id, "mem") => Some(Ref::Memory((*id).to_owned())),
            ["conversations", id, seq] if ids::is_id(id, "ses") => {
                Some(Ref::Message { session_id: (*id).to_owned(), seq: number(seq)? })
            }
            ["traces", id, index] if ids::is_id(id, "trc") => {
                Some(Ref::Trace { trace_id: (*id).to_owned(), index: number(index)? })
            }
            _ => None,
        }
    }
}

/// A search position: where the last page ended, and which search it belongs to.
fn cursor(after: &store::context::After, search: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("sc1:{}:{}:{}:{search}", after.snapshot, after.doc_id, after.position))
}

fn parse_cursor(c: &str, search: &str) -> Result<store::context::After, ApiError> {
    let bad = || ApiError::invalid("`cursor` is not a cursor this server gave out; pass `nextCursor` unchanged");
    let text = URL_SAFE_NO_PAD.decode(c).ok().and_then(|b| String::from_utf8(b).ok()).ok_or_else(bad)?;
    let parts: Vec<&str> = text.split(':').collect();
    let ["sc1", snapshot, doc_id, position, of] = parts.as_slice() else { return Err(bad()) };
    if *of != search {
        return Err(ApiError::invalid(
            "this `cursor` belongs to another search; pass it with the same query, scope and workspace",
        ));
    }
    let number = |s: &str| s.parse::<i64>().map_err(|_| bad());
    Ok(store::context::After { snapshot: number(snapshot)?, doc_id: number(doc_id)?, position: number(position)? })
}

/// The workspaces a search looks in: the named (or connection's) one for traces; otherwise the named one
/// or every workspace the key may see.
fn workspaces_of(cx: &Cx<'_>, scopes: &[&str], slug: Option<&str>) -> Result<Vec<String>, ApiError> {
    if scopes == ["traces"] {
        return Ok(vec![cx.workspace(slug)?.workspace_id.clone()]);
    }
    visible_workspaces(cx, slug)
}

/// The named workspace, or, without a name, every workspace the key may see (only its own for a key
/// locked to one): where a caller's memory and conversations are looked for.
pub fn visible_workspaces(cx: &Cx<'_>, slug: Option<&str>) -> Result<Vec<String>, ApiError> {
    if slug.is_some() {
        return Ok(vec![cx.workspace(slug)?.workspace_id.clone()]);
    }
    let caller = cx.caller()?;
    Ok(caller
        .memberships
        .iter()
        .filter(|m| caller.locked_workspace_id.as_ref().is_none_or(|l| *l == m.workspace_id))
        .map(|m| m.workspace_id.clone())
        .collect())
}

/// The caller's slug of one of their workspaces.
pub fn slug_of(cx: &Cx<'_>, workspace_id: &str) -> String {
    cx.caller
        .as_ref()
        .and_then(|c| c.memberships.iter().find(|m| m.workspace_id == workspace_id))
        .map(|m| m.slug.clone())
        .unwrap_or_default()
}

/// search_context
pub async fn search(cx: &Cx<'_>, p: SearchContext) -> Result<ContextHits, ApiError> {
    let limit = p.limit.map_or(10, Int::get);
    let scopes: Vec<&str> = match p.scope {
        None => vec!["memory", "conversations"],
        Some(s) => vec![s.as_str()],
    };
    let query = fulltext::parse_query(&p.query)
        .ok_or_else(|| ApiError::invalid("`query` has no words to search for; try a word or two"))?;
    let workspace_ids = workspaces_of(cx, &scopes, p.workspace.as_deref())?;
    let search_id = fingerprint::of_arguments(&json!([p.query, scopes, workspace_ids]))[..12].to_owned();
    let position = p.cursor.as_deref().filter(|c| !c.is_empty()).map(|c| parse_cursor(c, &search_id)).transpose()?;
    if position.is_none() && scopes.contains(&"conversations") {
        index::catch_up(cx, &workspace_ids).await;
    }
    let caller = cx.caller()?;
    let filter =
        store::context::Filter { scopes: &scopes, workspace_ids: &workspace_ids, account_id: &caller.account_id };
    let mut rows = store::context::search(cx.db(), &query.fts, &filter, position, limit + 1).await?;
    let next_cursor = (rows.len() as i64 > limit).then(|| {
        rows.truncate(limit as usize);
        let last = rows.last().expect("a full page has a last row");
        let after = store::context::After { snapshot: last.snapshot, doc_id: last.doc.doc_id, position: last.position };
        cursor(&after, &search_id)
    });
    let hits = rows
        .into_iter()
        .map(|r| {
            let d = r.doc;
            let source = Some(d.source_id.clone());
            ContextHit {
                reference: Ref::of(&d.scope, &d.source_id, d.seq),
                snippet: fulltext::snippet(&d.body, &query.needles, SNIPPET_CHARS),
                title: d.title,
                role: d.role,
                chars: d.full_chars,
                at_ms: d.created_ms,
                workspace: slug_of(cx, &d.workspace_id),
                memory_id: source.clone().filter(|_| d.scope == "memory"),
                session_id: source.clone().filter(|_| d.scope == "conversations"),
                trace_id: source.filter(|_| d.scope == "traces"),
                scope: d.scope,
            }
        })
        .collect();
    Ok(ContextHits { hits, next_cursor })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadContext {
    /// The `ref` of a `search_context` hit, unchanged.
    #[serde(rename = "ref")]
    pub reference: String,
    /// Where to start, in characters: `nextOffset` from the previous read (default 0).
    pub offset: Option<i64>,
    /// Most characters to return (default 8,000).
    pub limit: Option<Int<1, 32_000>>,
    /// Ignored: the workspace is the hit's.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ContextRead {
    #[serde(rename = "ref")]
    pub reference: String,
    /// `memory`, `conversations` or `traces`.
    pub scope: String,
    pub title: String,
    /// Who wrote it (as in the hit).
    pub role: String,
    /// The text from `offset`, at most `limit` characters.
    pub text: String,
    pub offset: i64,
    /// The whole text's length in characters.
    pub total_chars: i64,
    /// More text follows: pass this as `offset` to read on. Absent at the end.
    #[serde(rename = "nextOffset", skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<i64>,
    pub at_ms: i64,
    /// The workspace's slug.
    pub workspace: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The message's id in its session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// `read_session` with this cursor reads the conversation on from this message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// The tool of a trace's `tool_call`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
}

/// read_context
pub async fn read(cx: &Cx<'_>, p: ReadContext) -> Result<ContextRead, ApiError> {
    let offset = p.offset.unwrap_or(0);
    if offset < 0 {
        return Err(ApiError::invalid("`offset` must be 0 or more"));
    }
    let limit = p.limit.map_or(8_000, Int::get);
    let reference = Ref::parse(&p.reference).ok_or_else(|| {
        ApiError::invalid("`ref` is not a ref this server gave out; pass a `search_context` hit's `ref` unchanged")
    })?;
    let gone = || ApiError::new(Code::NotFound, format!("`{}` is gone (deleted, or not yours)", p.reference));
    let mut out = ContextRead {
        reference: p.reference.clone(),
        scope: String::new(),
        title: String::new(),
        role: String::new(),
        text: String::new(),
        offset,
        total_chars: 0,
        next_offset: None,
        at_ms: 0,
        workspace: String::new(),
        memory_id: None,
        session_id: None,
        message_id: None,
        cursor: None,
        trace_id: None,
        tool: None,
    };
    let whole = match reference {
        Ref::Memory(id) => {
            let doc = store::context::doc(cx.db(), "memory", &id, 0).await?;
            let caller = cx.caller()?;
            let doc = doc.filter(|d| d.account_id.as_deref() == Some(caller.account_id.as_str())).ok_or_else(gone)?;
            cx.member_of(&doc.workspace_id, "entry").map_err(|_| gone())?;
            out.memory_id = Some(id);
            (out.scope, out.title, out.role, out.at_ms) = ("memory".into(), doc.title, doc.role, doc.created_ms);
            out.workspace = slug_of(cx, &doc.workspace_id);
            doc.body
        }
        Ref::Message { session_id, seq } => {
            let (row, m) = sessions::load(cx, &session_id).await?;
            let call = calls::Read { after: seq - 1, message_id: None, limit: 1, wait_ms: 0 };
            let page = match sessions::call(cx, &session_id, call).await {
                Ok(page) => page,
                // A position past the log's end: no such message.
                Err(e) if e.code == Code::InvalidParams => return Err(gone()),
                Err(e) => return Err(e),
            };
            let event = page.events.into_iter().find(|e| e.seq == seq).ok_or_else(gone)?;
            let (role, text) = index::message_of(&event).ok_or_else(gone)?;
            (out.scope, out.title, out.role, out.at_ms) = ("conversations".into(), row.title, role, event.at_ms);
            out.workspace = m.slug;
            out.message_id = Some(event.message_id);
            out.cursor = Some(crate::rules::cursor::event(seq));
            out.session_id = Some(session_id);
            text
        }
        Ref::Trace { trace_id, index } => {
            let trace = store::context::trace(cx.db(), &trace_id).await?.ok_or_else(gone)?;
            let m = cx.member_of(&trace.workspace_id, "entry").map_err(|_| gone())?;
            let message = crate::ops::traces::message(cx, &trace, index).await?.ok_or_else(gone)?;
            (out.scope, out.title, out.role) = ("traces".into(), trace.name, message.role);
            out.at_ms = message.at_ms.or(trace.started_ms).unwrap_or(trace.created_ms);
            out.workspace = m.slug.clone();
            out.tool = message.name;
            out.trace_id = Some(trace_id);
            message.text
        }
    };
    let total = whole.chars().count() as i64;
    if offset > total {
        return Err(ApiError::invalid(format!("`offset` {offset} is past the end: the text has {total} characters")));
    }
    out.text = whole.chars().skip(offset as usize).take(limit as usize).collect();
    out.total_chars = total;
    let end = offset + out.text.chars().count() as i64;
    out.next_offset = (end < total).then_some(end);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_round_trip_and_garbage_is_refused() {
        let ses = ids::new_id("ses");
        let r = Ref::of("conversations", &ses, 42);
        assert_eq!(Ref::parse(&r), Some(Ref::Message { session_id: ses.clone(), seq: 42 }));
        let mem = ids::new_id("mem");
        assert_eq!(Ref::parse(&Ref::of("memory", &mem, 0)), Some(Ref::Memory(mem)));
        for bad in ["", "memory/x", "conversations/ses_x/1", &format!("conversations/{ses}/-1"), "traces//0"] {
            assert_eq!(Ref::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn cursors_are_bound_to_their_search() {
        let after = store::context::After { snapshot: 99, doc_id: 17, position: 4 };
        let c = cursor(&after, "abc");
        assert_eq!(parse_cursor(&c, "abc").unwrap(), after);
        assert_eq!(parse_cursor(&c, "other").unwrap_err().code, Code::InvalidParams);
        assert!(parse_cursor("nope", "abc").is_err());
    }
}
