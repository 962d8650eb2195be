-- Bytes in R2 live under their workspace (`w/<workspace_id>/<sha256>`). A deleted workspace's prefix is
-- purged by the cron: the row waits here until its listing comes back empty an hour after the delete
-- (a write that was in flight when the workspace went has landed by then).
CREATE TABLE blob_purge (
  workspace_id TEXT PRIMARY KEY,
  deleted_ms INTEGER NOT NULL,
  -- When to look again: now while keys remain, the end of the grace once the prefix listed empty.
  next_ms INTEGER NOT NULL
);
CREATE INDEX blob_purge_next ON blob_purge(next_ms);

-- Whether any row of a workspace still refers to some bytes (before deleting a trace's).
CREATE INDEX task_file_sha ON task_file(workspace_id, sha256);
CREATE INDEX artifact_sha ON artifact(workspace_id, sha256);
CREATE INDEX trace_messages_sha ON trace(workspace_id, messages_sha256);
