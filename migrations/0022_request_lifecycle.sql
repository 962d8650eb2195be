-- A request's whole life: besides answered, it can expire (a per-workspace time, default 24 hours),
-- be closed because its session ended, or be withdrawn by the agent that asked. Identical open access
-- requests of one session are one (`dedupe_key`: the target and scopes).

ALTER TABLE workspace ADD COLUMN request_expiry_minutes INTEGER NOT NULL DEFAULT 1440;

-- SQLite cannot widen a CHECK in place: the table is rebuilt with the new statuses and columns.
CREATE TABLE request_new (
  request_id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  task_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('access', 'plan', 'decision', 'question')),
  payload TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('open', 'answered', 'expired', 'closed', 'withdrawn')),
  answer TEXT,
  answered_by TEXT,
  created_ms INTEGER NOT NULL,
  answered_ms INTEGER,
  expires_ms INTEGER,
  dedupe_key TEXT
);
INSERT INTO request_new (request_id, workspace_id, task_id, session_id, kind, payload, status, answer, answered_by,
    created_ms, answered_ms, expires_ms)
  SELECT request_id, workspace_id, task_id, session_id, kind, payload, status, answer, answered_by, created_ms,
    answered_ms, created_ms + 86400000 FROM request;
DROP TABLE request;
ALTER TABLE request_new RENAME TO request;
CREATE INDEX request_open ON request(task_id, status, created_ms);
CREATE INDEX request_workspace_open ON request(workspace_id, status, created_ms);
CREATE INDEX request_session_open ON request(session_id) WHERE status = 'open';
CREATE INDEX request_expiring ON request(expires_ms) WHERE status = 'open';
CREATE UNIQUE INDEX request_dedupe ON request(session_id, dedupe_key) WHERE status = 'open' AND dedupe_key IS NOT NULL;
