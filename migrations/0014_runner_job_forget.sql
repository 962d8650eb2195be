-- A fourth job kind, `ssh_forget`: a revoked ssh grant ends the ssh-agent of every runner turn that may
-- hold its key. The kinds are a CHECK, which SQLite cannot alter: the table is made again. Jobs are
-- transient (each dies with its lease), so one queued across this migration is only asked again.
DROP TABLE runner_job;
CREATE TABLE runner_job (
  job_id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  session_id TEXT NOT NULL,
  lease_id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('sync', 'run', 'ssh_agent', 'ssh_forget')),
  -- The job as the runner sees it: {command, timeout_s} or {grant_id, ttl_s}.
  spec TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('queued', 'done')),
  result TEXT,
  -- An ssh_agent job's key is handed out once.
  key_served INTEGER NOT NULL DEFAULT 0,
  created_ms INTEGER NOT NULL,
  done_ms INTEGER
);
CREATE INDEX runner_job_lease ON runner_job(lease_id, status);
