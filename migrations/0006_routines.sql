-- Routines: agents on a schedule. Each fire starts a new session of `agent_id` or sends `message` into
-- `session_id`; `cron` (5 fields, in `timezone`) or only when run by hand. `next_fire_ms` is when the
-- cron trigger next has work for it.
CREATE TABLE routine (
  routine_id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  agent_id TEXT,
  session_id TEXT,
  message TEXT NOT NULL,
  cron TEXT,
  timezone TEXT NOT NULL DEFAULT 'UTC',
  budget_cents INTEGER,
  enabled INTEGER NOT NULL DEFAULT 1,
  next_fire_ms INTEGER,
  created_by_key_id TEXT,
  created_ms INTEGER NOT NULL,
  CHECK ((agent_id IS NULL) <> (session_id IS NULL))
);
CREATE INDEX routine_due ON routine(next_fire_ms) WHERE enabled = 1 AND next_fire_ms IS NOT NULL;
CREATE INDEX routine_workspace ON routine(workspace_id, created_ms DESC);

-- Each fire, recorded once: a cron fire is unique per routine and scheduled time, so a repeated trigger
-- never fires twice. The queue consumer moves it from `queued` to `done` (or `failed`, never lost).
CREATE TABLE routine_fire (
  fire_id TEXT PRIMARY KEY,
  routine_id TEXT NOT NULL REFERENCES routine(routine_id) ON DELETE CASCADE,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  scheduled_ms INTEGER NOT NULL,
  trigger TEXT NOT NULL CHECK (trigger IN ('cron', 'manual')),
  status TEXT NOT NULL CHECK (status IN ('queued', 'done', 'failed')),
  session_id TEXT,
  message_id TEXT,
  attempts INTEGER NOT NULL DEFAULT 0,
  error TEXT,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL
);
CREATE UNIQUE INDEX routine_fire_once ON routine_fire(routine_id, scheduled_ms) WHERE trigger = 'cron';
CREATE INDEX routine_fire_recent ON routine_fire(routine_id, created_ms DESC);
CREATE INDEX routine_fire_queued ON routine_fire(status, created_ms) WHERE status = 'queued';
