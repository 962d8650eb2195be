-- Sessions and what makes mutations safe to retry and spend accountable.
--
-- `session` is the index of sessions: what lists and filters need. The truth of a session's transcript
-- and turn lives in its `Session` Durable Object; the object writes status and spend back here at each
-- transition, so reads need no object round trip.
CREATE TABLE session (
  session_id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  -- The task (shared folder) this session works in; a new session's task id is its own id.
  task_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  agent_name TEXT NOT NULL,
  harness TEXT NOT NULL,
  model TEXT NOT NULL,
  thinking TEXT NOT NULL DEFAULT 'medium',
  status TEXT NOT NULL CHECK (status IN ('provisioning', 'idle', 'running', 'terminated')),
  -- The first message, cut short: what lists show.
  title TEXT NOT NULL,
  note TEXT NOT NULL DEFAULT '',
  budget_cents INTEGER,
  spent_cents INTEGER NOT NULL DEFAULT 0,
  last_message_id TEXT,
  started_by_key_id TEXT,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL
);
CREATE INDEX session_workspace ON session(workspace_id, created_ms DESC, session_id DESC);
CREATE INDEX session_agent ON session(agent_id, created_ms DESC, session_id DESC);
CREATE INDEX session_task ON session(task_id, created_ms);

-- Idempotency receipts, scoped by workspace, tool and key. A claim inserts `running` with the ids the
-- work will use (`reserved`), so an executor that dies is replaced by one that reuses the same ids and
-- can never create a second session. Expired receipts are taken over as if absent, and purged by cron.
CREATE TABLE receipt (
  workspace_id TEXT NOT NULL,
  tool TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('running', 'done')),
  reserved TEXT NOT NULL,
  result TEXT,
  claimed_ms INTEGER NOT NULL,
  expires_ms INTEGER NOT NULL,
  PRIMARY KEY (workspace_id, tool, idempotency_key)
);
CREATE INDEX receipt_expiry ON receipt(expires_ms);

-- Every charge: who spent what on which model. The wallet (`workspace.balance_cents`) and the session's
-- `spent_cents` move in the same batch as the row that explains them.
CREATE TABLE usage_entry (
  entry_id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  session_id TEXT,
  key_id TEXT,
  agent_id TEXT,
  model TEXT NOT NULL,
  cents INTEGER NOT NULL,
  input_tokens INTEGER NOT NULL DEFAULT 0,
  output_tokens INTEGER NOT NULL DEFAULT 0,
  created_ms INTEGER NOT NULL
);
CREATE INDEX usage_workspace_time ON usage_entry(workspace_id, created_ms);
CREATE INDEX usage_session_time ON usage_entry(session_id, created_ms);
