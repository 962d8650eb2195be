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

-- Two more runner job kinds: `push` (land's push) and `grant_forget` (a revoked grant of any provider
-- ends what the runner holds of it). The kinds were a CHECK, which SQLite cannot alter: the table is made
-- again, this time without one: a job's kind is always one of the server's own words (`domain::jobs`),
-- never a caller's. Jobs are transient (each dies with its lease), so one queued across this migration is
-- only asked again.
DROP TABLE runner_job;
CREATE TABLE runner_job (
  job_id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  session_id TEXT NOT NULL,
  lease_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  -- The job as the runner sees it: {command, timeout_s}, {grant_id, ttl_s}, {url, branch, …}.
  spec TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('queued', 'done')),
  result TEXT,
  -- An ssh_agent job's key is handed out once.
  key_served INTEGER NOT NULL DEFAULT 0,
  created_ms INTEGER NOT NULL,
  done_ms INTEGER
);
CREATE INDEX runner_job_lease ON runner_job(lease_id, status);
