//! The search index (`context_doc` and its FTS5 twin `context_fts`), memory entries (which live only in
//! it), how far each session's log is indexed, and the trace library.

use super::{first, rows, DbResult, Sql, Stmt};
use crate::stmt;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Most characters of one entry or message that are indexed and kept in D1; the whole stays at its source.
pub const INDEX_CHARS: usize = 16_000;
/// Docs are sent to D1 as one JSON array per statement, cut to stay well under D1's 2 MB value limit.
const CHUNK_BYTES: usize = 512 * 1024;

/// One entry or message to index.
#[derive(Debug, Clone)]
pub struct Doc {
    pub seq: i64,
    pub role: String,
    /// The whole text; only its first [`INDEX_CHARS`] characters are stored.
    pub text: String,
    pub at_ms: i64,
}

/// Where a batch of docs belongs.
pub struct Source<'a> {
    /// `memory`, `conversations` or `traces`.
    pub scope: &'a str,
    pub workspace_id: &'a str,
    /// Memory entries: their owner.
    pub account_id: Option<&'a str>,
    /// `mem_…`, `ses_…` or `trc_…`.
    pub source_id: &'a str,
    pub title: &'a str,
    pub author: Option<&'a str>,
    /// Traces: add the docs only if this batch's trace row exists (it was not a duplicate upload).
    pub only_if_trace: Option<&'a str>,
}

const ADD_DOCS: &str = "INSERT INTO context_doc (scope, workspace_id, account_id, source_id, seq, role, author, title,
    body, full_chars, created_ms)
  SELECT ?1, ?2, ?3, ?4, json_extract(j.value, '$.seq'), json_extract(j.value, '$.role'), ?5, ?6,
    json_extract(j.value, '$.body'), json_extract(j.value, '$.chars'), json_extract(j.value, '$.at_ms')
  FROM json_each(?7) j WHERE ?8 IS NULL OR EXISTS (SELECT 1 FROM trace WHERE trace_id = ?8)
  ON CONFLICT (scope, source_id, seq) DO NOTHING";
/// Indexes the docs just added, and none already indexed, so a retried batch indexes nothing twice.
const ADD_TERMS: &str = "INSERT INTO context_fts (rowid, body)
  SELECT d.doc_id, json_extract(j.value, '$.terms') FROM json_each(?3) j
    JOIN context_doc d ON d.scope = ?1 AND d.source_id = ?2 AND d.seq = json_extract(j.value, '$.seq')
  WHERE NOT EXISTS (SELECT 1 FROM context_fts f WHERE f.rowid = d.doc_id)";

/// The statements that add a source's docs, idempotently: re-adding a doc (same scope, source and seq)
/// changes nothing. Run them in one batch with whatever they belong with.
pub fn add_docs(source: &Source<'_>, docs: &[Doc]) -> Vec<Stmt> {
    let mut stmts = Vec::new();
    let (mut rows, mut terms, mut bytes) = (Vec::new(), Vec::new(), 0);
    for (i, d) in docs.iter().enumerate() {
        let body: String = d.text.chars().take(INDEX_CHARS).collect();
        let indexed = crate::rules::fulltext::index_text(&body);
        bytes += body.len() + indexed.len() + 64;
        terms.push(json!({ "seq": d.seq, "terms": indexed }));
        rows.push(json!({
            "seq": d.seq, "role": d.role, "body": body, "chars": d.text.chars().count(), "at_ms": d.at_ms,
        }));
        if bytes >= CHUNK_BYTES || i + 1 == docs.len() {
            let (r, t) = (serde_json::Value::Array(std::mem::take(&mut rows)), std::mem::take(&mut terms));
            stmts.push(stmt!(
                ADD_DOCS,
                source.scope,
                source.workspace_id,
                source.account_id,
                source.source_id,
                source.author,
                source.title,
                r.to_string(),
                source.only_if_trace
            ));
            stmts.push(stmt!(ADD_TERMS, source.scope, source.source_id, serde_json::Value::Array(t).to_string()));
            bytes = 0;
        }
    }
    stmts
}

/// An indexed entry or message.
#[derive(Debug, Clone, Deserialize)]
pub struct DocRow {
    pub doc_id: i64,
    pub scope: String,
    pub workspace_id: String,
    pub account_id: Option<String>,
    pub source_id: String,
    pub seq: i64,
    pub role: String,
    pub author: Option<String>,
    pub title: String,
    pub body: String,
    pub full_chars: i64,
    pub created_ms: i64,
}

/// A search hit: the doc, its bm25 score (lower is better), its position in the ranking and the newest doc
/// id the search saw.
#[derive(Debug, Clone, Deserialize)]
pub struct HitRow {
    #[serde(flatten)]
    pub doc: DocRow,
    pub score: f64,
    pub position: i64,
    pub snapshot: i64,
}

/// Where a search looks.
pub struct Filter<'a> {
    pub scopes: &'a [&'a str],
    pub workspace_ids: &'a [String],
    /// Memory rows must belong to this account.
    pub account_id: &'a str,
}

/// Where the next page starts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct After {
    /// The newest doc id the first page saw: later docs never join the pages that follow.
    pub snapshot: i64,
    /// The last hit shown, and its position in the ranking then.
    pub doc_id: i64,
    pub position: i64,
}

/// Ranked by bm25, then doc id, and numbered. A page continues after the last hit's position in the
/// ranking as it stands now (or after its old position, if that hit is gone), not after its score:
/// every new doc anywhere moves every bm25 score a little (the corpus statistics change), which would
/// repeat or skip hits at a page boundary, while it leaves the order of the docs it does not touch alone.
const SEARCH: &str = "WITH numbered AS MATERIALIZED (
    SELECT *, ROW_NUMBER() OVER (ORDER BY score, doc_id) AS position FROM (
      SELECT d.doc_id, d.scope, d.workspace_id, d.account_id, d.source_id, d.seq, d.role, d.author, d.title, d.body,
        d.full_chars, d.created_ms, bm25(context_fts) AS score
      FROM context_fts JOIN context_doc d ON d.doc_id = context_fts.rowid
      WHERE context_fts MATCH ?1
        AND d.scope IN (SELECT value FROM json_each(?2))
        AND d.workspace_id IN (SELECT value FROM json_each(?3))
        AND (d.scope <> 'memory' OR d.account_id = ?4)
        AND d.doc_id <= COALESCE(?5, (SELECT MAX(doc_id) FROM context_doc))))
  SELECT *, COALESCE(?5, (SELECT MAX(doc_id) FROM context_doc)) AS snapshot FROM numbered
  WHERE position > COALESCE((SELECT position FROM numbered WHERE doc_id = ?6), ?7, 0)
  ORDER BY position LIMIT ?8";

pub async fn search(
    db: &dyn Sql,
    fts: &str,
    filter: &Filter<'_>,
    after: Option<After>,
    limit: i64,
) -> DbResult<Vec<HitRow>> {
    let stmt = stmt!(
        SEARCH,
        fts,
        json!(filter.scopes).to_string(),
        json!(filter.workspace_ids).to_string(),
        filter.account_id,
        after.map(|a| a.snapshot),
        after.map(|a| a.doc_id),
        after.map(|a| a.position),
        limit
    );
    rows(db, stmt).await
}

const DOC: &str =
    "SELECT doc_id, scope, workspace_id, account_id, source_id, seq, role, author, title, body, full_chars,
    created_ms FROM context_doc WHERE scope = ?1 AND source_id = ?2 AND seq = ?3";

pub async fn doc(db: &dyn Sql, scope: &str, source_id: &str, seq: i64) -> DbResult<Option<DocRow>> {
    first(db, stmt!(DOC, scope, source_id, seq)).await
}

/// A memory entry as lists show it.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryRow {
    pub memory_id: String,
    /// Internal; clients see the workspace's slug.
    #[serde(skip_serializing, default)]
    pub workspace_id: String,
    pub text: String,
    /// Who saved it: `key:<key_id>` (over the API) or `session:<session_id>` (an agent).
    pub saved_by: String,
    pub created_ms: i64,
}

const MEMORY: &str = "SELECT source_id AS memory_id, workspace_id, body AS text, COALESCE(author, '') AS saved_by,
    created_ms FROM context_doc
  WHERE scope = 'memory' AND account_id = ?1 AND workspace_id IN (SELECT value FROM json_each(?2))
    AND (?3 IS NULL OR created_ms < ?3 OR (created_ms = ?3 AND source_id < ?4))
  ORDER BY created_ms DESC, source_id DESC LIMIT ?5";

/// A page of an account's memory in some workspaces, newest first, after a keyset position.
pub async fn memory(
    db: &dyn Sql,
    account_id: &str,
    workspace_ids: &[String],
    before: Option<(i64, String)>,
    limit: i64,
) -> DbResult<Vec<MemoryRow>> {
    let (at, id) = before.map_or((None, None), |(a, i)| (Some(a), Some(i)));
    rows(db, stmt!(MEMORY, account_id, json!(workspace_ids).to_string(), at, id, limit)).await
}

const DELETE_MEMORY: &str = "DELETE FROM context_doc
  WHERE scope = 'memory' AND source_id = ?1 AND account_id = ?2 AND workspace_id IN (SELECT value FROM json_each(?3))
  RETURNING source_id";

/// Deletes one of an account's entries (its index row goes with it, by trigger); `false` when none.
pub async fn delete_memory(
    db: &dyn Sql,
    memory_id: &str,
    account_id: &str,
    workspace_ids: &[String],
) -> DbResult<bool> {
    let gone = db.all(stmt!(DELETE_MEMORY, memory_id, account_id, json!(workspace_ids).to_string())).await?;
    Ok(!gone.is_empty())
}

const SET_WATERMARK: &str = "INSERT INTO context_session (session_id, workspace_id, indexed_seq, indexed_ms)
  VALUES (?1, ?2, ?3, ?4) ON CONFLICT (session_id) DO UPDATE SET
    indexed_seq = MAX(indexed_seq, excluded.indexed_seq), indexed_ms = MAX(indexed_ms, excluded.indexed_ms)";

/// Moves a session's watermark forward (never back: two indexers may race, both idempotent).
pub fn set_watermark(session_id: &str, workspace_id: &str, seq: i64, now_ms: i64) -> Stmt {
    stmt!(SET_WATERMARK, session_id, workspace_id, seq, now_ms)
}

/// A session whose log has news the index has not seen.
#[derive(Debug, Clone, Deserialize)]
pub struct Lagging {
    pub session_id: String,
    pub workspace_id: String,
    pub title: String,
    pub indexed_seq: i64,
}

const LAGGING: &str = "SELECT s.session_id, s.workspace_id, s.title, COALESCE(c.indexed_seq, 0) AS indexed_seq
  FROM session s LEFT JOIN context_session c ON c.session_id = s.session_id
  WHERE s.workspace_id IN (SELECT value FROM json_each(?1)) AND (c.indexed_ms IS NULL OR c.indexed_ms < s.updated_ms)
  ORDER BY s.updated_ms DESC LIMIT ?2";

/// The most recently active sessions of some workspaces whose index is behind their log.
pub async fn lagging(db: &dyn Sql, workspace_ids: &[String], limit: i64) -> DbResult<Vec<Lagging>> {
    rows(db, stmt!(LAGGING, json!(workspace_ids).to_string(), limit)).await
}

const INDEX_STATE: &str = "SELECT s.session_id, s.workspace_id, s.title, COALESCE(c.indexed_seq, 0) AS indexed_seq
  FROM session s LEFT JOIN context_session c ON c.session_id = s.session_id WHERE s.session_id = ?1";

/// One session's index position; `None` when the session is not in the index of sessions.
pub async fn index_state(db: &dyn Sql, session_id: &str) -> DbResult<Option<Lagging>> {
    first(db, stmt!(INDEX_STATE, session_id)).await
}

/// A trace of the library.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceRow {
    pub trace_id: String,
    /// Internal; clients see the workspace's slug.
    #[serde(skip_serializing, default)]
    pub workspace_id: String,
    pub name: String,
    /// `claude_code` or `codex`.
    pub format: String,
    pub message_count: i64,
    pub size_bytes: i64,
    /// Internal: the SHA-256 of the parsed messages, whose bytes are in R2.
    #[serde(skip_serializing, default)]
    pub messages_sha256: String,
    /// When the traced session began, from the log's own timestamps.
    pub started_ms: Option<i64>,
    pub created_ms: i64,
}

pub struct NewTrace<'a> {
    pub trace_id: &'a str,
    pub workspace_id: &'a str,
    pub name: &'a str,
    pub format: &'a str,
    pub message_count: i64,
    pub size_bytes: i64,
    pub content_sha256: &'a str,
    pub messages_sha256: &'a str,
    pub started_ms: Option<i64>,
    pub key_id: Option<&'a str>,
    pub now_ms: i64,
}

const INSERT_TRACE: &str = "INSERT INTO trace (trace_id, workspace_id, name, format, message_count, size_bytes,
    content_sha256, messages_sha256, started_ms, uploaded_by_key_id, created_ms)
  VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) ON CONFLICT (workspace_id, content_sha256) DO NOTHING";
const TRACE_BY_CONTENT: &str =
    "SELECT trace_id, workspace_id, name, format, message_count, size_bytes, messages_sha256,
    started_ms, created_ms FROM trace WHERE workspace_id = ?1 AND content_sha256 = ?2";

/// Adds a trace and indexes its messages in one atomic batch. The same file uploaded again to the
/// workspace adds nothing and returns the trace it already is.
pub async fn insert_trace(db: &dyn Sql, t: &NewTrace<'_>, docs: &[Doc]) -> DbResult<Option<TraceRow>> {
    let mut stmts = vec![stmt!(
        INSERT_TRACE,
        t.trace_id,
        t.workspace_id,
        t.name,
        t.format,
        t.message_count,
        t.size_bytes,
        t.content_sha256,
        t.messages_sha256,
        t.started_ms,
        t.key_id,
        t.now_ms
    )];
    let source = Source {
        scope: "traces",
        workspace_id: t.workspace_id,
        account_id: None,
        source_id: t.trace_id,
        title: t.name,
        author: None,
        only_if_trace: Some(t.trace_id),
    };
    stmts.extend(add_docs(&source, docs));
    stmts.push(stmt!(TRACE_BY_CONTENT, t.workspace_id, t.content_sha256));
    let last = db.batch(stmts).await?.pop().unwrap_or_default();
    last.into_iter().next().map(super::decode).transpose()
}

const TRACE: &str = "SELECT trace_id, workspace_id, name, format, message_count, size_bytes, messages_sha256,
    started_ms, created_ms FROM trace WHERE trace_id = ?1";

pub async fn trace(db: &dyn Sql, trace_id: &str) -> DbResult<Option<TraceRow>> {
    first(db, stmt!(TRACE, trace_id)).await
}

const TRACES: &str = "SELECT trace_id, workspace_id, name, format, message_count, size_bytes, messages_sha256,
    started_ms, created_ms FROM trace
  WHERE workspace_id = ?1 AND (?2 IS NULL OR created_ms < ?2 OR (created_ms = ?2 AND trace_id < ?3))
  ORDER BY created_ms DESC, trace_id DESC LIMIT ?4";

/// A page of a workspace's traces, newest first, after a keyset position.
pub async fn traces(
    db: &dyn Sql,
    workspace_id: &str,
    before: Option<(i64, String)>,
    limit: i64,
) -> DbResult<Vec<TraceRow>> {
    let (at, id) = before.map_or((None, None), |(a, i)| (Some(a), Some(i)));
    rows(db, stmt!(TRACES, workspace_id, at, id, limit)).await
}

const DELETE_TRACE_DOCS: &str =
    "DELETE FROM context_doc WHERE scope = 'traces' AND source_id = ?1 AND workspace_id = ?2";
const DELETE_TRACE: &str = "DELETE FROM trace WHERE trace_id = ?1 AND workspace_id = ?2 RETURNING trace_id";

/// Removes a trace and its index rows together; `false` when there was none.
pub async fn delete_trace(db: &dyn Sql, trace_id: &str, workspace_id: &str) -> DbResult<bool> {
    let mut results = db
        .batch(vec![stmt!(DELETE_TRACE_DOCS, trace_id, workspace_id), stmt!(DELETE_TRACE, trace_id, workspace_id)])
        .await?;
    Ok(results.pop().is_some_and(|rows| !rows.is_empty()))
}

const SESSION_OWNER: &str = "SELECT COALESCE((SELECT account_id FROM api_key WHERE key_id = ?1),
    (SELECT owner_account_id FROM workspace WHERE workspace_id = ?2)) AS account_id";

/// Whose memory an agent saves to: the account whose key started its session, else the workspace's owner.
pub async fn session_owner(db: &dyn Sql, key_id: Option<&str>, workspace_id: &str) -> DbResult<Option<String>> {
    #[derive(Deserialize)]
    struct Row {
        account_id: Option<String>,
    }
    Ok(first::<Row>(db, stmt!(SESSION_OWNER, key_id, workspace_id)).await?.and_then(|r| r.account_id))
}
