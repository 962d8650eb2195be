-- The session server: what a running agent can reach through its session token.

-- Session tokens, stored only as hashes; dead once their session is terminated.
CREATE TABLE session_token (
  token_hash TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  created_ms INTEGER NOT NULL
);
CREATE INDEX session_token_session ON session_token(session_id);

-- Connectors: a workspace's deploy and server targets (the contract's "targets"), credentials sealed.
CREATE TABLE connector (
  connector_id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  provider TEXT NOT NULL CHECK (provider IN ('vercel', 'aws', 'gcp', 'supabase', 'github', 'ssh')),
  env TEXT NOT NULL CHECK (env IN ('prod', 'staging', 'preview', 'scm')),
  -- NULL until connected; sealed JSON of the credential (env variables, or an SSH key).
  sealed_credentials TEXT,
  credentials_expire_ms INTEGER,
  deploy_command TEXT,
  created_ms INTEGER NOT NULL,
  UNIQUE (workspace_id, name)
);

-- Policies decide access requests without a person: per connector and scope, or workspace-wide per
-- scope (connector_id ''). `decision` is ask, allow or deny.
CREATE TABLE policy (
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  connector_id TEXT NOT NULL DEFAULT '',
  scope TEXT NOT NULL CHECK (scope IN ('read', 'write', 'deploy', 'delete')),
  decision TEXT NOT NULL CHECK (decision IN ('ask', 'allow', 'deny')),
  PRIMARY KEY (workspace_id, connector_id, scope)
);

-- What agents wait on: access requests, questions, plans, decisions. Answered by members through
-- answer_request (or decided by a policy).
CREATE TABLE request (
  request_id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  task_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('access', 'plan', 'decision', 'question')),
  payload TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('open', 'answered', 'expired')),
  answer TEXT,
  answered_by TEXT,
  created_ms INTEGER NOT NULL,
  answered_ms INTEGER
);
CREATE INDEX request_open ON request(task_id, status, created_ms);

-- Grants: scoped, expiring access to one connector for one session (or, persistent, for every
-- session of the workspace until revoked).
CREATE TABLE grant_ (
  grant_id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  session_id TEXT NOT NULL,
  task_id TEXT NOT NULL,
  connector_id TEXT NOT NULL,
  scopes TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'active', 'denied', 'revoked')),
  persistent INTEGER NOT NULL DEFAULT 0,
  expires_ms INTEGER,
  decided_by TEXT,
  request_id TEXT,
  created_ms INTEGER NOT NULL
);
CREATE INDEX grant_session ON grant_(session_id, connector_id);
CREATE INDEX grant_persistent ON grant_(workspace_id, connector_id) WHERE persistent = 1;

-- Every use of a credential.
CREATE TABLE audit (
  audit_id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  session_id TEXT,
  grant_id TEXT,
  connector_id TEXT,
  action TEXT NOT NULL,
  detail TEXT NOT NULL DEFAULT '',
  created_ms INTEGER NOT NULL
);
CREATE INDEX audit_workspace ON audit(workspace_id, created_ms DESC);

-- Lanes. A task with lanes gives each session its own copy of the folder (task_file.lane = session id)
-- until it lands; the base folder has a linear history of commits (landings and direct writes).
ALTER TABLE task ADD COLUMN lanes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE task ADD COLUMN review TEXT NOT NULL DEFAULT 'auto' CHECK (review IN ('auto', 'manual'));
ALTER TABLE session ADD COLUMN lane_base_seq INTEGER NOT NULL DEFAULT 0;
-- Commands agentsky asked this session to remember: a space-separated list of run, deploy, checks.
ALTER TABLE session ADD COLUMN asked TEXT NOT NULL DEFAULT '';

CREATE TABLE task_commit (
  task_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  commit_id TEXT NOT NULL,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  subject TEXT NOT NULL,
  body TEXT NOT NULL DEFAULT '',
  files TEXT NOT NULL,
  session_id TEXT,
  created_ms INTEGER NOT NULL,
  PRIMARY KEY (task_id, seq)
);
