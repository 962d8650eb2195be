-- The conformance suite's fixture tasks (`CONFORMANCE_FIXTURES=1` only, at /v1/conformance/mcp): each one's
-- state as JSON, so any request finds it; a task past `expires_ms` is gone. Empty in production.
CREATE TABLE conformance_task (
  task_id TEXT PRIMARY KEY,
  state TEXT NOT NULL,
  expires_ms INTEGER NOT NULL
);
