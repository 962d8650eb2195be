-- Money in through Stripe: a workspace's Stripe customer and saved card, its automatic top-up, the
-- receipts of every credit, and the Stripe events already applied (so a redelivered event moves no money).

-- One per workspace that ever paid or saved a card: the Stripe customer is created once and remembered.
-- The automatic top-up charges `auto_amount_cents` to the saved card when a settlement leaves the wallet
-- under `auto_threshold_cents`; `auto_pending_ms` marks the one top-up in flight until its
-- `payment_intent.succeeded` arrives (or it is an hour old), so a busy wallet is not charged once per turn.
CREATE TABLE billing_account (
  workspace_id TEXT PRIMARY KEY REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  customer_id TEXT NOT NULL,
  payment_method_id TEXT,
  auto_threshold_cents INTEGER CHECK (auto_threshold_cents >= 0),
  auto_amount_cents INTEGER CHECK (auto_amount_cents > 0),
  auto_pending_ms INTEGER,
  auto_last_error TEXT,
  updated_ms INTEGER NOT NULL
);

-- Every credit to a wallet and where it came from. A Stripe object (checkout session, payment intent)
-- credits at most once.
CREATE TABLE credit_receipt (
  receipt_id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  source TEXT NOT NULL CHECK (source IN ('checkout', 'auto', 'admin')),
  cents INTEGER NOT NULL CHECK (cents > 0),
  stripe_object_id TEXT UNIQUE,
  stripe_event_id TEXT,
  created_ms INTEGER NOT NULL
);
CREATE INDEX credit_receipt_workspace ON credit_receipt(workspace_id, created_ms DESC);

-- Stripe events applied, by id: the batch that applies one inserts its id first and does the rest only
-- when that insert did.
CREATE TABLE stripe_event (
  event_id TEXT PRIMARY KEY,
  type TEXT NOT NULL,
  applied_ms INTEGER NOT NULL
);
