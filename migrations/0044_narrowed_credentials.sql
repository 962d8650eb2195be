-- Credentials narrowed to a grant (issue 37). A connection says how it is connected (`credential_kind`):
-- `env` variables or an `ssh` key are the connection's own and handed over as they are; a `github_app`
-- mints each grant an installation token restricted to the target's repositories and the grant's scopes;
-- an `aws_role` is assumed for each grant with a session policy of its scopes; a `gcp_service_account`
-- generates each grant a token of its own (read-only for read grants, downscoped to the target's buckets).
ALTER TABLE connector ADD COLUMN credential_kind TEXT;
UPDATE connector SET credential_kind = CASE provider WHEN 'ssh' THEN 'ssh' ELSE 'env' END
  WHERE sealed_credentials IS NOT NULL;

-- What was minted for a grant, sealed, reused until shortly before it expires (then minted again). It
-- goes with its grant.
CREATE TABLE grant_credential (
  grant_id TEXT PRIMARY KEY REFERENCES grant_(grant_id) ON DELETE CASCADE,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  sealed TEXT NOT NULL,
  expires_ms INTEGER NOT NULL,
  minted_ms INTEGER NOT NULL
);
