-- Memory, search and the trace library (search_context, read_context), and the session record with its
-- read model (read_session_record, read_agent_performance). The help center needs no tables: its articles
-- are bundled with the Worker.

-- Everything search_context finds, one row per memory entry or message. Memory entries live only here.
-- Conversation messages are copies of their session object's log, and trace messages copies of an uploaded
-- trace's messages (whole in R2): `body` holds at most the first 16,000 characters, `full_chars` the whole
-- length. `seq` orders a source's rows: the event's sequence number in a session, the message's index in a
-- trace, 0 for a memory entry. Retried indexing inserts nothing twice (the unique key).
CREATE TABLE context_doc (
  -- AUTOINCREMENT: ids only grow, so a search's snapshot (the newest id it saw) never admits a later row.
  doc_id INTEGER PRIMARY KEY AUTOINCREMENT,
  scope TEXT NOT NULL CHECK (scope IN ('memory', 'conversations', 'traces')),
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  -- Memory is personal: the account an entry belongs to (NULL for the other scopes).
  account_id TEXT,
  -- The memory entry (`mem_…`), session (`ses_…`) or trace (`trc_…`).
  source_id TEXT NOT NULL,
  seq INTEGER NOT NULL DEFAULT 0,
  -- memory; user, agent, peer, routine, goal (conversations); user, assistant, tool_call, tool_result (traces).
  role TEXT NOT NULL,
  -- Who saved a memory entry: `key:<key_id>` or `session:<session_id>`.
  author TEXT,
  title TEXT NOT NULL,
  body TEXT NOT NULL,
  full_chars INTEGER NOT NULL,
  created_ms INTEGER NOT NULL,
  UNIQUE (scope, source_id, seq)
);
CREATE INDEX context_doc_memory ON context_doc(account_id, created_ms DESC, source_id DESC) WHERE scope = 'memory';

-- The full-text index of context_doc.body (rowid = doc_id). Words are porter-stemmed and case- and
-- accent-folded; runs of CJK characters reach it already rewritten as overlapping bigrams by the server
-- (rules::fulltext), because unicode61 would take a whole unspaced Chinese sentence as one token and the
-- trigram tokenizer cannot find two-character words, the commonest in Chinese. D1 and the bundled SQLite
-- both ship FTS5 with these tokenizers.
CREATE VIRTUAL TABLE context_fts USING fts5(body, tokenize = 'porter unicode61 remove_diacritics 2');
-- A row leaving context_doc (deleted, or its workspace deleted by cascade) leaves the index with it.
CREATE TRIGGER context_doc_unindex AFTER DELETE ON context_doc BEGIN
  DELETE FROM context_fts WHERE rowid = old.doc_id;
END;

-- How far each session's log has been copied into context_doc: events up to `indexed_seq`, as of
-- `indexed_ms`. A session whose index row is older than its `updated_ms` has news to index.
CREATE TABLE context_session (
  session_id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  indexed_seq INTEGER NOT NULL,
  indexed_ms INTEGER NOT NULL
);

-- The workspace's trace library: session logs of local agents (Claude Code, Codex) uploaded to be
-- searched. The parsed messages live in R2 under their SHA-256 (`blobs/<messages_sha256>`); the same file
-- uploaded twice to a workspace is one trace (`content_sha256`).
CREATE TABLE trace (
  trace_id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  format TEXT NOT NULL CHECK (format IN ('claude_code', 'codex')),
  message_count INTEGER NOT NULL,
  size_bytes INTEGER NOT NULL,
  content_sha256 TEXT NOT NULL,
  messages_sha256 TEXT NOT NULL,
  started_ms INTEGER,
  uploaded_by_key_id TEXT,
  created_ms INTEGER NOT NULL,
  UNIQUE (workspace_id, content_sha256)
);
CREATE INDEX trace_workspace ON trace(workspace_id, created_ms DESC, trace_id DESC);

-- The session record: what people decided about a session's result and what was observed to happen to
-- it, each with who and when. Members record over REST, tools over the workspace's webhook.
-- `dedupe_key` makes a retried record (an idempotency key, a webhook's delivery id) count once.
CREATE TABLE session_record (
  record_id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  session_id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('decision', 'outcome')),
  name TEXT NOT NULL CHECK (name IN ('adopted', 'rerun', 'revise', 'discard', 'vote', 'did_the_job', 'approve',
    'pr_merged', 'deployed', 'reopened', 'later_failure', 'shipped')),
  -- `up`/`down` for vote, `yes`/`no` for did_the_job; NULL otherwise.
  value TEXT,
  note TEXT NOT NULL DEFAULT '',
  url TEXT,
  by_kind TEXT NOT NULL CHECK (by_kind IN ('member', 'webhook')),
  -- The member's account id, or the webhook's sender (`github:<login>`, or what the caller named).
  by_id TEXT NOT NULL,
  by_name TEXT NOT NULL,
  by_key_id TEXT,
  dedupe_key TEXT,
  recorded_ms INTEGER NOT NULL
);
CREATE INDEX session_record_session ON session_record(session_id, recorded_ms);
CREATE UNIQUE INDEX session_record_once ON session_record(workspace_id, dedupe_key) WHERE dedupe_key IS NOT NULL;

-- The read model behind read_agent_performance: per workspace, UTC day the sessions started, harness and
-- model, the count of each decision and outcome and of sessions with at least one decision. Moved in the
-- same batch as the record that changes it, so a read sums a range of days instead of every record.
-- Spend and session counts come from the session index itself.
CREATE TABLE agent_performance (
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  day_ms INTEGER NOT NULL,
  harness TEXT NOT NULL,
  model TEXT NOT NULL,
  decided_sessions INTEGER NOT NULL DEFAULT 0,
  adopted INTEGER NOT NULL DEFAULT 0,
  rerun INTEGER NOT NULL DEFAULT 0,
  revise INTEGER NOT NULL DEFAULT 0,
  discard INTEGER NOT NULL DEFAULT 0,
  vote_up INTEGER NOT NULL DEFAULT 0,
  vote_down INTEGER NOT NULL DEFAULT 0,
  did_the_job_yes INTEGER NOT NULL DEFAULT 0,
  did_the_job_no INTEGER NOT NULL DEFAULT 0,
  approve INTEGER NOT NULL DEFAULT 0,
  pr_merged INTEGER NOT NULL DEFAULT 0,
  deployed INTEGER NOT NULL DEFAULT 0,
  reopened INTEGER NOT NULL DEFAULT 0,
  later_failure INTEGER NOT NULL DEFAULT 0,
  shipped INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (workspace_id, day_ms, harness, model)
);
