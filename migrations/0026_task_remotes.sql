-- A task's git remote (issue 17): where `land` pushes the landed tree, through the runner of the landing
-- session, with a grant on `connector_id`. `pushed_head` is the commit agentsky last pushed there: the next
-- push builds on it, so a branch someone else moved is a non-fast-forward push, refused, never overwritten.
CREATE TABLE task_remote (
  task_id TEXT PRIMARY KEY REFERENCES task(task_id) ON DELETE CASCADE,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  url TEXT NOT NULL,
  branch TEXT NOT NULL,
  connector_id TEXT NOT NULL,
  pushed_head TEXT,
  updated_ms INTEGER NOT NULL
);
