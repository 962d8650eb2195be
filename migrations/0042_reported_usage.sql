-- What a coding agent CLI (`claude-code`, `codex`) reported a turn used: recorded, never charged (the
-- person's own CLI pays its own provider), so it stays out of `usage_entry`, whose entries sum to what
-- left the wallet. One row per turn, replaced by the turn's later, larger reports. `micro_usd` is the
-- CLI's own cost when it gives one, else the tokens priced as the deployment prices models
-- (`estimated` 1).
CREATE TABLE reported_usage (
  entry_id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  session_id TEXT NOT NULL,
  agent_id TEXT,
  harness TEXT NOT NULL,
  model TEXT NOT NULL,
  input_tokens INTEGER NOT NULL,
  cached_input_tokens INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  micro_usd INTEGER NOT NULL,
  estimated INTEGER NOT NULL,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL
);
CREATE INDEX reported_usage_session ON reported_usage(session_id, created_ms);
-- The session's total of the above, moved in the same batch: budgets and performance read one row.
ALTER TABLE session ADD COLUMN reported_micro_usd INTEGER NOT NULL DEFAULT 0;
