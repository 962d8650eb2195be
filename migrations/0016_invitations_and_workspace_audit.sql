-- Invitations replace adding members by email (issue 13): sign-up never proves an email, so an address is
-- no identity to give a workspace to. An owner or admin makes an invitation; its token is shown once and
-- kept only as a SHA-256 hash; whoever is signed in and accepts it joins with its role, once, before it
-- expires. `email` is a note for the people involved, never checked.
CREATE TABLE invitation (
  invitation_id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  token_hash TEXT NOT NULL UNIQUE,
  role TEXT NOT NULL CHECK (role IN ('admin', 'member')),
  email TEXT,
  invited_by TEXT NOT NULL REFERENCES account(account_id),
  status TEXT NOT NULL CHECK (status IN ('pending', 'accepted', 'revoked')),
  accepted_by TEXT REFERENCES account(account_id),
  created_ms INTEGER NOT NULL,
  expires_ms INTEGER NOT NULL,
  decided_ms INTEGER
);
CREATE INDEX invitation_pending ON invitation(workspace_id, status, created_ms);

-- One audit log for credential uses and workspace changes (invitations, members, roles, approvals,
-- policies): who acted, when an account did (sessions and runners are named by session_id and detail),
-- and whom or what it concerned (an account, an invitation).
ALTER TABLE audit ADD COLUMN actor_account_id TEXT;
ALTER TABLE audit ADD COLUMN subject TEXT;
