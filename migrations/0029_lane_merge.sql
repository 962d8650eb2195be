-- Three-way merges of a task's base into a lane (`land`).
-- Each base version names the base commit that wrote it, so a lane can read the base as it was at its
-- merge base. Versions written before this are dated by the commit written in the same batch (same time).
ALTER TABLE task_file ADD COLUMN base_seq INTEGER;
UPDATE task_file SET base_seq = (SELECT MAX(c.seq) FROM task_commit c
    WHERE c.task_id = task_file.task_id AND c.created_ms <= task_file.created_ms)
  WHERE lane = '';
CREATE INDEX task_file_base_seq ON task_file(task_id, lane, path, base_seq);

-- A land that stopped on conflicts: {"seq": the base head it merged, "files": {path: the lane's version
-- then}}. A later write of such a file in the lane is the agent's reconciled version.
ALTER TABLE session ADD COLUMN lane_merging TEXT;

-- Checks run for a session whose own runner is gone, by any runner of its workspace, in a fresh checkout
-- of the session's lane (`GET /v1/runner/files` with the checkout's lease).
CREATE TABLE runner_checkout (
  job_id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  session_id TEXT NOT NULL,
  -- {command, timeout_s}
  spec TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('queued', 'leased', 'done')),
  runner_id TEXT,
  lease_id TEXT UNIQUE,
  lease_expires_ms INTEGER,
  result TEXT,
  created_ms INTEGER NOT NULL,
  done_ms INTEGER
);
CREATE INDEX runner_checkout_open ON runner_checkout(workspace_id, status, created_ms);
