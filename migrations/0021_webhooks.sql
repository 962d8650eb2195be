-- Outgoing webhooks (Standard Webhooks): a workspace's endpoints, and one delivery row per event and
-- endpoint, which is what the queue consumer works from and what the console shows as delivered or failed.

-- An endpoint: where events go, which events, and its signing secrets, sealed (never stored or shown in the
-- clear after creation). During a rotation's overlap the previous secret still signs, until
-- `previous_until_ms`, so receivers can switch without missing a delivery.
CREATE TABLE webhook_endpoint (
  webhook_id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  url TEXT NOT NULL,
  events TEXT NOT NULL,              -- JSON array of event names
  format TEXT NOT NULL DEFAULT 'standard',
  description TEXT NOT NULL DEFAULT '',
  secret_sealed TEXT NOT NULL,
  previous_sealed TEXT,
  previous_until_ms INTEGER,
  created_by TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL
);
CREATE INDEX webhook_endpoint_workspace ON webhook_endpoint(workspace_id, created_ms);

-- One event to one endpoint. `event_id` is the `webhook-id` every attempt carries, so receivers can
-- de-duplicate; `attempts` is also the claim: an attempt runs only for the message whose number matches,
-- so a duplicate or a stale queue message does nothing. `pending` rows past `next_attempt_ms` whose
-- message was lost are sent again by the cron sweep.
CREATE TABLE webhook_delivery (
  delivery_id TEXT PRIMARY KEY,
  webhook_id TEXT NOT NULL REFERENCES webhook_endpoint(webhook_id) ON DELETE CASCADE,
  workspace_id TEXT NOT NULL,
  event_id TEXT NOT NULL,
  event TEXT NOT NULL,
  payload TEXT NOT NULL,             -- the JSON body, fixed at emission so every retry signs the same bytes
  status TEXT NOT NULL,              -- pending, delivered, failed
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_ms INTEGER NOT NULL,
  last_status INTEGER,
  last_body TEXT,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  UNIQUE (webhook_id, event_id)
);
CREATE INDEX webhook_delivery_endpoint ON webhook_delivery(webhook_id, created_ms);
CREATE INDEX webhook_delivery_due ON webhook_delivery(status, next_attempt_ms);
