-- MCP tasks: a tools/call on /v1/mcp (start_session, send_message, hand_off_session, run_routine) answered
-- with a task handle instead of its result. The call itself has run when the row is written; the row names
-- the turn it started, so any later request can follow that turn to its end. Written before the handle is
-- answered, so a tasks/get that follows always finds it. Only the key that made it sees it.
CREATE TABLE mcp_task (
  task_id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  key_id TEXT NOT NULL,
  tool TEXT NOT NULL,
  -- The tool's own result (JSON), and the turn it started: its session, message and the cursor to read from.
  call_result TEXT NOT NULL,
  session_id TEXT NOT NULL,
  message_id TEXT NOT NULL,
  cursor TEXT,
  -- working | input_required | completed | failed | cancelled
  status TEXT NOT NULL,
  status_message TEXT,
  -- Once completed: the CallToolResult (JSON). Once failed: the JSON-RPC error (JSON).
  outcome TEXT,
  ttl_ms INTEGER NOT NULL,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  expires_ms INTEGER NOT NULL
);
CREATE INDEX mcp_task_by_key ON mcp_task (key_id, created_ms DESC, task_id DESC);
