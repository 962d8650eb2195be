-- Tasks as the unit of work. A task is the shared folder several sessions work in; its id is its first
-- session's id. The task row carries what belongs to all its sessions: a title and an optional budget
-- capping the sum of their spend.
CREATE TABLE task (
  task_id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  title TEXT NOT NULL,
  budget_cents INTEGER,
  created_ms INTEGER NOT NULL
);
CREATE INDEX task_workspace ON task(workspace_id, created_ms DESC, task_id DESC);

-- How a session came to be in its task: the root, a helper that joined it, a handoff's continuation, or
-- a child an agent started. `parent_session_id` is the session it came from.
ALTER TABLE session ADD COLUMN relation TEXT NOT NULL DEFAULT 'root' CHECK (relation IN ('root', 'helper', 'handoff', 'child'));
ALTER TABLE session ADD COLUMN parent_session_id TEXT;
-- A share link's token is stored only as its hash; `share_view_only` 0 lets the link's holder send
-- messages too.
ALTER TABLE session ADD COLUMN share_hash TEXT;
ALTER TABLE session ADD COLUMN share_view_only INTEGER NOT NULL DEFAULT 1;
CREATE UNIQUE INDEX session_share ON session(share_hash) WHERE share_hash IS NOT NULL;

-- Published results of a task: a snapshot of a task file (bytes in R2 by hash) with a public link when
-- shared. The link token is stored only as its hash.
CREATE TABLE artifact (
  artifact_id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  task_id TEXT NOT NULL,
  name TEXT NOT NULL,
  path TEXT NOT NULL,
  version INTEGER NOT NULL,
  content_type TEXT NOT NULL,
  size_bytes INTEGER NOT NULL,
  sha256 TEXT NOT NULL,
  share_hash TEXT,
  published_by_key_id TEXT,
  created_ms INTEGER NOT NULL
);
CREATE INDEX artifact_task ON artifact(task_id, created_ms DESC);
CREATE INDEX artifact_workspace ON artifact(workspace_id, created_ms DESC);
CREATE UNIQUE INDEX artifact_share ON artifact(share_hash) WHERE share_hash IS NOT NULL;

-- Hand-offs: a session continued by another agent in a new session of the same task.
CREATE TABLE handoff (
  handoff_id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  source_session_id TEXT NOT NULL,
  target_session_id TEXT,
  agent_id TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'completed', 'failed')),
  error TEXT,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL
);
CREATE INDEX handoff_source ON handoff(source_session_id);

-- Sessions started before tasks had rows: each root session's task gets its row.
INSERT INTO task (task_id, workspace_id, title, created_ms)
  SELECT session_id, workspace_id, title, created_ms FROM session WHERE session_id = task_id;
