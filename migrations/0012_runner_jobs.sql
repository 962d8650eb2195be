-- Runner jobs: what the server asks the runner holding a session's turn to do in that turn's working
-- folder (upload and refresh its files, run a command, load an SSH key into its ssh-agent). A job names
-- the lease it was given to, so it dies with the lease; its result is written once.
CREATE TABLE runner_job (
  job_id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  session_id TEXT NOT NULL,
  lease_id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('sync', 'run', 'ssh_agent')),
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
