-- Workspace secrets (model API keys, MCP bearer tokens): only ever stored sealed with AES-256-GCM under
-- a key derived from the Worker secret SECRETS_KEY. `sealed` is base64 of nonce || ciphertext || tag.
CREATE TABLE secret (
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  sealed TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  PRIMARY KEY (workspace_id, name)
);
