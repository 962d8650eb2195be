-- A session token minted for a runner's turn dies with the turn's lease: it names the lease.
ALTER TABLE session_token ADD COLUMN lease_id TEXT;
CREATE INDEX session_token_lease ON session_token(lease_id) WHERE lease_id IS NOT NULL;
