-- Web Push (issue 39): the deployment's VAPID key pair, made once on first need, its private half sealed
-- with SECRETS_KEY (rules::seal); one row at most.
CREATE TABLE push_vapid (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  public_key TEXT NOT NULL,
  private_sealed TEXT NOT NULL,
  created_ms INTEGER NOT NULL
);

-- A person's browsers that take pushes: the Push API subscription (endpoint and keys), the key it was
-- made through (an action answered from a notification acts as it), and when a push last went through.
CREATE TABLE push_subscription (
  subscription_id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES account(account_id) ON DELETE CASCADE,
  key_id TEXT NOT NULL,
  endpoint TEXT NOT NULL UNIQUE,
  p256dh TEXT NOT NULL,
  auth TEXT NOT NULL,
  label TEXT NOT NULL DEFAULT '',
  created_ms INTEGER NOT NULL,
  last_ok_ms INTEGER
);
CREATE INDEX push_subscription_account ON push_subscription(account_id);

-- One-time answers carried by a notification's action buttons: the token's hash, bound to one request,
-- one answer and the subscription's account and key; used once, before it expires.
CREATE TABLE push_action (
  token_hash TEXT PRIMARY KEY,
  request_id TEXT NOT NULL REFERENCES request(request_id) ON DELETE CASCADE,
  task_id TEXT NOT NULL,
  answer TEXT NOT NULL,
  account_id TEXT NOT NULL,
  key_id TEXT NOT NULL,
  expires_ms INTEGER NOT NULL,
  used_ms INTEGER
);
CREATE INDEX push_action_request ON push_action(request_id);
