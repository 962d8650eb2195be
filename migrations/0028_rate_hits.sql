-- The per-minute log of calls that passed on a key's bucket (`key:<key_id>`): counted in the same D1 batch
-- that checks the key, so a call costs no trip to a Limiter object. A row lives one window (60 s) and is
-- pruned by the next counted call.
CREATE TABLE rate_hit (
  bucket TEXT NOT NULL,
  at_ms INTEGER NOT NULL
);
CREATE INDEX rate_hit_bucket ON rate_hit (bucket, at_ms);
CREATE INDEX rate_hit_at ON rate_hit (at_ms);
