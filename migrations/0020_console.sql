-- The console: people signed in from a browser, and the open requests they approve.

-- A browser's sign-in. The cookie holds a random token; only its SHA-256 is kept. It acts through the API
-- key it was opened with (its scopes and workspace lock, never more), so revoking that key ends it too.
CREATE TABLE console_session (
  console_session_id TEXT PRIMARY KEY,
  token_hash TEXT NOT NULL UNIQUE,
  key_id TEXT NOT NULL REFERENCES api_key(key_id) ON DELETE CASCADE,
  created_ms INTEGER NOT NULL,
  expires_ms INTEGER NOT NULL,
  ended_ms INTEGER
);
CREATE INDEX console_session_key ON console_session(key_id);

-- A one-time sign-in link (`sky console`): used once, within a minute, to open a console session for the
-- same key.
CREATE TABLE console_link (
  link_hash TEXT PRIMARY KEY,
  key_id TEXT NOT NULL REFERENCES api_key(key_id) ON DELETE CASCADE,
  created_ms INTEGER NOT NULL,
  expires_ms INTEGER NOT NULL,
  used_ms INTEGER
);

-- Approvals lists every open request of a workspace, newest first.
CREATE INDEX request_workspace_open ON request(workspace_id, status, created_ms);
