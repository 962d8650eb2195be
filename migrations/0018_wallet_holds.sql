-- Money that never goes below zero: a model call holds what it may cost before it is made and settles
-- what it did cost after (Stripe's authorize, then capture), and a paid public agent's price moves from
-- the caller's wallet to the owner's as one pair of ledger entries.

-- Money held for a model call in flight. The hold's id is the ledger entry id the call settles into, so
-- a replayed step finds its own hold (or its settled entry) instead of holding twice. Settling deletes
-- the hold; the cron trigger releases holds whose step died before settling.
CREATE TABLE wallet_hold (
  hold_id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  cents INTEGER NOT NULL CHECK (cents > 0),
  created_ms INTEGER NOT NULL
);
CREATE INDEX wallet_hold_age ON wallet_hold(created_ms);

-- What an entry is: model usage, or one side of a paid run (the caller's `run_price`, the owner's
-- `run_earning` with negative cents). A workspace's entries sum to what left its wallet.
ALTER TABLE usage_entry ADD COLUMN kind TEXT NOT NULL DEFAULT 'model'
  CHECK (kind IN ('model', 'run_price', 'run_earning'));

-- The last line of defence: no statement may move a wallet down below zero (a wallet already below it
-- from before this migration may still be credited). The statements that spend are written never to
-- try; if one ever did, its whole batch fails instead of the wallet going negative.
CREATE TRIGGER workspace_balance_never_below_zero
BEFORE UPDATE OF balance_cents ON workspace
WHEN NEW.balance_cents < 0 AND NEW.balance_cents < OLD.balance_cents
BEGIN
  SELECT RAISE(ABORT, 'balance_cents would go below zero');
END;
