-- Claude Code and Codex as harnesses (`claude-code`, `codex`): run by a person's `sky runner` like `runner`.
-- SQLite cannot widen a CHECK in place: the table is rebuilt with the new words; nothing references it.
CREATE TABLE agent_new (
  agent_id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  handle TEXT UNIQUE,
  harness TEXT NOT NULL CHECK (harness IN ('echo', 'openai', 'runner', 'claude-code', 'codex')),
  model TEXT NOT NULL,
  instructions TEXT NOT NULL DEFAULT '',
  description TEXT NOT NULL DEFAULT '',
  categories TEXT NOT NULL DEFAULT '[]',
  mcp_servers TEXT NOT NULL DEFAULT '[]',
  is_public INTEGER NOT NULL DEFAULT 0,
  price_cents_per_run INTEGER NOT NULL DEFAULT 0,
  session_count INTEGER NOT NULL DEFAULT 0,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL
);
INSERT INTO agent_new SELECT agent_id, workspace_id, name, handle, harness, model, instructions, description, categories,
  mcp_servers, is_public, price_cents_per_run, session_count, created_ms, updated_ms FROM agent;
DROP TABLE agent;
ALTER TABLE agent_new RENAME TO agent;
CREATE INDEX agent_workspace ON agent(workspace_id, created_ms);
