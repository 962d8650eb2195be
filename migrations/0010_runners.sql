-- Runners: `sky runner` processes that run the turns of `runner` agents on their own machines. A runner
-- authenticates with its own token (stored as a hash); turns wait in `runner_turn` until one claims them
-- with a lease it must keep renewing, so a dead runner's turn is claimed again.
CREATE TABLE runner (
  runner_id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  token_hash TEXT NOT NULL UNIQUE,
  created_ms INTEGER NOT NULL,
  last_seen_ms INTEGER
);

CREATE TABLE runner_turn (
  session_id TEXT NOT NULL,
  message_id TEXT NOT NULL,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  status TEXT NOT NULL CHECK (status IN ('queued', 'leased', 'done')),
  runner_id TEXT,
  lease_id TEXT,
  lease_expires_ms INTEGER,
  attempts INTEGER NOT NULL DEFAULT 0,
  created_ms INTEGER NOT NULL,
  PRIMARY KEY (session_id, message_id)
);
CREATE INDEX runner_turn_open ON runner_turn(workspace_id, status, created_ms);
