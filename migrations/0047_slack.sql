-- Slack with buttons (issue 39): a workspace's Slack app connection (its bot token and signing secret,
-- sealed) and the channel requests are posted to; the Slack users members linked with a one-time code from
-- the console; and the message each request was posted as, so a decision anywhere updates it.
CREATE TABLE slack_connection (
  workspace_id TEXT PRIMARY KEY REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  team_id TEXT NOT NULL,
  channel TEXT NOT NULL,
  sealed TEXT NOT NULL,
  created_ms INTEGER NOT NULL
);
CREATE INDEX slack_connection_team ON slack_connection(team_id);

CREATE TABLE slack_link_code (
  code_hash TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  account_id TEXT NOT NULL REFERENCES account(account_id) ON DELETE CASCADE,
  expires_ms INTEGER NOT NULL
);

CREATE TABLE slack_identity (
  team_id TEXT NOT NULL,
  slack_user_id TEXT NOT NULL,
  account_id TEXT NOT NULL REFERENCES account(account_id) ON DELETE CASCADE,
  created_ms INTEGER NOT NULL,
  PRIMARY KEY (team_id, slack_user_id)
);

CREATE TABLE slack_message (
  request_id TEXT PRIMARY KEY REFERENCES request(request_id) ON DELETE CASCADE,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  channel TEXT NOT NULL,
  ts TEXT NOT NULL,
  asked TEXT NOT NULL
);
