-- Each start of a hosted session's sandbox, for its bill and for Health: when it was asked to start, when
-- its runner first called in (the boot time), when it last called, and how it ended with what its time
-- cost. `boot_id` is also the wallet hold taken before it started and the ledger entry it settles into;
-- `egress` is the JSON list of the host names it may reach, which its egress guard reads.
CREATE TABLE sandbox_boot (
  boot_id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  session_id TEXT NOT NULL,
  egress TEXT NOT NULL DEFAULT '[]',
  started_ms INTEGER NOT NULL,
  ready_ms INTEGER,
  seen_ms INTEGER NOT NULL,
  ended_ms INTEGER,
  -- `asleep`: its runner exited after its idle time; `stopped`: the session stopped it; `failed`: it did
  -- not start.
  ended TEXT CHECK (ended IN ('asleep', 'stopped', 'failed')),
  seconds INTEGER,
  cents INTEGER
);
CREATE INDEX sandbox_boot_session ON sandbox_boot(session_id, started_ms);
CREATE INDEX sandbox_boot_workspace ON sandbox_boot(workspace_id, started_ms);
CREATE INDEX sandbox_boot_open ON sandbox_boot(seen_ms) WHERE ended_ms IS NULL;

-- A sandbox's running time is a ledger entry of its own kind (`sandbox`); SQLite keeps a column's check
-- with the table, so the ledger is copied into one that allows it.
CREATE TABLE usage_entry_next (
  entry_id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  session_id TEXT,
  key_id TEXT,
  agent_id TEXT,
  model TEXT NOT NULL,
  cents INTEGER NOT NULL,
  input_tokens INTEGER NOT NULL DEFAULT 0,
  output_tokens INTEGER NOT NULL DEFAULT 0,
  created_ms INTEGER NOT NULL,
  kind TEXT NOT NULL DEFAULT 'model' CHECK (kind IN ('model', 'run_price', 'run_earning', 'sandbox'))
);
INSERT INTO usage_entry_next (entry_id, workspace_id, session_id, key_id, agent_id, model, cents, input_tokens,
    output_tokens, created_ms, kind)
  SELECT entry_id, workspace_id, session_id, key_id, agent_id, model, cents, input_tokens, output_tokens, created_ms,
    kind FROM usage_entry;
DROP TABLE usage_entry;
ALTER TABLE usage_entry_next RENAME TO usage_entry;
CREATE INDEX usage_workspace_time ON usage_entry(workspace_id, created_ms);
CREATE INDEX usage_session_time ON usage_entry(session_id, created_ms);
