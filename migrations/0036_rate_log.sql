-- The per-minute log of a key's bucket, numbered: each passed call takes the bucket's next `seq`, and its
-- `at_ms` never goes back, so what is left after pruning is one run of numbers and a bucket's count is
-- `last - first + 1`, read off the primary key. `rate_hit` was counted with COUNT(*) and OFFSET over the
-- window, which grew with the calls in it (tens of thousands at a high limit) on every call.
-- Counts in flight when this runs are lost: at most one minute of them, in the limit's favour.
DROP TABLE rate_hit;
CREATE TABLE rate_log (
  bucket TEXT NOT NULL,
  seq INTEGER NOT NULL,
  at_ms INTEGER NOT NULL,
  PRIMARY KEY (bucket, seq)
) WITHOUT ROWID;
CREATE INDEX rate_log_at ON rate_log (at_ms);
