-- The foundation: who may call (accounts and their API keys), where things live (workspaces and their
-- members), and what can be started there (agents). Table names are singular, keys are `<table>_id`,
-- times are unix milliseconds.

-- A person or program. Email is the sign-in identity, unique regardless of case.
CREATE TABLE account (
  account_id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  email TEXT NOT NULL COLLATE NOCASE UNIQUE,
  created_ms INTEGER NOT NULL
);

-- Everything else hangs off a workspace, so every query can be scoped by it and the data sharded by it later.
-- The wallet lives here because sessions of every member spend from it.
CREATE TABLE workspace (
  workspace_id TEXT PRIMARY KEY,
  slug TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  owner_account_id TEXT NOT NULL REFERENCES account(account_id),
  is_personal INTEGER NOT NULL DEFAULT 0,
  balance_cents INTEGER NOT NULL DEFAULT 0,
  card_saved INTEGER NOT NULL DEFAULT 0,
  created_ms INTEGER NOT NULL
);
-- One personal workspace per account: the default when a call names none.
CREATE UNIQUE INDEX workspace_personal ON workspace(owner_account_id) WHERE is_personal = 1;

CREATE TABLE membership (
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  account_id TEXT NOT NULL REFERENCES account(account_id),
  role TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
  created_ms INTEGER NOT NULL,
  PRIMARY KEY (workspace_id, account_id)
);
CREATE INDEX membership_account ON membership(account_id);

-- Only the SHA-256 of a key is kept; `prefix` is what lists show. `scopes` is 'read' or 'read write'.
-- A key with `workspace_id` set is locked to that workspace.
CREATE TABLE api_key (
  key_id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES account(account_id),
  name TEXT NOT NULL,
  key_hash TEXT NOT NULL UNIQUE,
  prefix TEXT NOT NULL,
  scopes TEXT NOT NULL CHECK (scopes IN ('read', 'read write')),
  workspace_id TEXT REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  created_ms INTEGER NOT NULL,
  last_used_ms INTEGER,
  revoked_ms INTEGER
);
CREATE INDEX api_key_account ON api_key(account_id);

-- An agent: a harness and a model, plus what the catalog shows. Handles are global so `@handle` names one
-- agent everywhere; public agents can be started from any workspace.
CREATE TABLE agent (
  agent_id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  handle TEXT UNIQUE,
  harness TEXT NOT NULL CHECK (harness IN ('echo', 'openai', 'runner')),
  model TEXT NOT NULL,
  instructions TEXT NOT NULL DEFAULT '',
  description TEXT NOT NULL DEFAULT '',
  categories TEXT NOT NULL DEFAULT '[]',
  mcp_servers TEXT NOT NULL DEFAULT '[]',
  is_public INTEGER NOT NULL DEFAULT 0,
  price_cents_per_run INTEGER NOT NULL DEFAULT 0,
  session_count INTEGER NOT NULL DEFAULT 0,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL
);
CREATE INDEX agent_workspace ON agent(workspace_id, created_ms);
