-- OAuth 2.1 for remote MCP clients that cannot send a bearer header (issue 20). A person consents in the
-- console; the client gets short-lived access tokens that are rows of `api_key` (so every existing auth
-- path, scope and workspace lock applies unchanged) and rotating refresh tokens. Only SHA-256 digests of
-- codes and tokens are kept.

-- A client: registered through Dynamic Client Registration (`client_id` is ours, `oac_…`), or a Client ID
-- Metadata Document (`client_id` is the https URL it was fetched from; `fetched_ms` says when, so it is
-- fetched again once stale). Public clients only: there is no client secret.
CREATE TABLE oauth_client (
  client_id TEXT PRIMARY KEY,
  kind TEXT NOT NULL CHECK (kind IN ('registered', 'metadata_document')),
  client_name TEXT NOT NULL,
  -- JSON array of the exact redirect URIs.
  redirect_uris TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  fetched_ms INTEGER NOT NULL
);

-- A person's decision to let a client act for them in one workspace with `scopes`, for one resource. It
-- is the token family: revoking it (disconnect, or a reused refresh token) revokes every token it issued.
CREATE TABLE oauth_grant (
  grant_id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES account(account_id),
  client_id TEXT NOT NULL,
  client_name TEXT NOT NULL,
  redirect_host TEXT NOT NULL,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  scopes TEXT NOT NULL CHECK (scopes IN ('read', 'read write')),
  resource TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  revoked_ms INTEGER
);
CREATE INDEX oauth_grant_account ON oauth_grant(account_id);

-- An authorization code: single use (`used_ms`), short-lived, bound to the PKCE challenge, the client and
-- the redirect URI of its request.
CREATE TABLE oauth_code (
  code_hash TEXT PRIMARY KEY,
  grant_id TEXT NOT NULL REFERENCES oauth_grant(grant_id) ON DELETE CASCADE,
  client_id TEXT NOT NULL,
  redirect_uri TEXT NOT NULL,
  code_challenge TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  expires_ms INTEGER NOT NULL,
  used_ms INTEGER
);

-- A refresh token: used once; its use issues the next. A second use of a used one revokes the grant.
CREATE TABLE oauth_refresh (
  refresh_hash TEXT PRIMARY KEY,
  grant_id TEXT NOT NULL REFERENCES oauth_grant(grant_id) ON DELETE CASCADE,
  created_ms INTEGER NOT NULL,
  expires_ms INTEGER NOT NULL,
  used_ms INTEGER
);
CREATE INDEX oauth_refresh_grant ON oauth_refresh(grant_id);

-- An access token is an API key row linked to its grant, and expires.
ALTER TABLE api_key ADD COLUMN oauth_grant_id TEXT REFERENCES oauth_grant(grant_id);
ALTER TABLE api_key ADD COLUMN expires_ms INTEGER;
CREATE INDEX api_key_oauth_grant ON api_key(oauth_grant_id) WHERE oauth_grant_id IS NOT NULL;
