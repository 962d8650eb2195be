-- Stronger approvals (issue 39): a target may require more than one owner or admin to approve a deploy or
-- delete on production, and a fresh console sign-in for each approval (rules::approvals). Without a row a
-- target takes one approval, as before.
CREATE TABLE approval_rule (
  connector_id TEXT PRIMARY KEY REFERENCES connector(connector_id) ON DELETE CASCADE,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  approvals INTEGER NOT NULL CHECK (approvals BETWEEN 1 AND 5),
  fresh_sign_in INTEGER NOT NULL DEFAULT 0 CHECK (fresh_sign_in IN (0, 1))
);

-- Each approval so far of a request that needs more than one, by account (each counts once), with the
-- channel it came through. They go with their request.
CREATE TABLE request_approval (
  request_id TEXT NOT NULL REFERENCES request(request_id) ON DELETE CASCADE,
  account_id TEXT NOT NULL,
  key_id TEXT NOT NULL,
  channel TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  PRIMARY KEY (request_id, account_id)
);
