-- Device sign-in for the `sky` CLI (RFC 8628 style): the CLI asks for a code, a person approves it in a
-- browser at /device, and the CLI's next poll receives a new API key named for the device.
--
-- Neither code is stored as given: `device_hash` is the SHA-256 of the secret the CLI polls with, and
-- `user_code_hash` the SHA-256 of the short code the person types (normalised: upper case, no dash).
-- The key itself is minted only when the CLI collects it, so no usable secret ever rests in this table.
CREATE TABLE device_code (
  device_code_id TEXT PRIMARY KEY,
  device_hash TEXT NOT NULL UNIQUE,
  user_code_hash TEXT NOT NULL UNIQUE,
  -- What the key will be called: "sky on <host>".
  device_name TEXT NOT NULL,
  -- pending → approved → delivered, or pending → denied. Expiry is `expires_ms`, not a status.
  status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'delivered')),
  -- Set on approval: whose key it will be, its scopes and workspace lock (those of the key that proved
  -- the account, so approving never widens what that person could already do).
  account_id TEXT REFERENCES account(account_id),
  scopes TEXT CHECK (scopes IN ('read', 'read write')),
  workspace_id TEXT REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  -- Set on delivery.
  key_id TEXT,
  interval_ms INTEGER NOT NULL,
  -- The last two polls, to answer `slow_down` to a CLI that polls faster than `interval_ms`.
  last_poll_ms INTEGER,
  prev_poll_ms INTEGER,
  created_ms INTEGER NOT NULL,
  expires_ms INTEGER NOT NULL
);
-- Old rows are swept by age when new codes are issued.
CREATE INDEX device_code_expires ON device_code(expires_ms);
