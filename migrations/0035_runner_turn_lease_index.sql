-- Heartbeats, job polls and session-token checks find a runner turn by its lease.
CREATE INDEX runner_turn_lease ON runner_turn(lease_id);
