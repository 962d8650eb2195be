-- A runner turn can be cancelled (`cancel_turn`, `tasks/cancel`): never claimed again, and its lease's
-- heartbeat answers `stop` so the runner ends the agent. SQLite cannot change a CHECK in place, so the
-- table is copied into one that allows the new status (nothing references runner_turn).
CREATE TABLE runner_turn_next (
  session_id TEXT NOT NULL,
  message_id TEXT NOT NULL,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  status TEXT NOT NULL CHECK (status IN ('queued', 'leased', 'done', 'cancelled')),
  runner_id TEXT,
  lease_id TEXT,
  lease_expires_ms INTEGER,
  attempts INTEGER NOT NULL DEFAULT 0,
  created_ms INTEGER NOT NULL,
  PRIMARY KEY (session_id, message_id)
);
INSERT INTO runner_turn_next (session_id, message_id, workspace_id, status, runner_id, lease_id, lease_expires_ms,
  attempts, created_ms)
  SELECT session_id, message_id, workspace_id, status, runner_id, lease_id, lease_expires_ms, attempts, created_ms
  FROM runner_turn;
DROP TABLE runner_turn;
ALTER TABLE runner_turn_next RENAME TO runner_turn;
CREATE INDEX runner_turn_open ON runner_turn(workspace_id, status, created_ms);
