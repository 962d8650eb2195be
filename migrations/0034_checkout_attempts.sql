-- How many times a runner took a checkout: a runner that went away leaves it to the next, up to a limit
-- (`runner_turn.attempts` counts the same for turns; both are claimed by `store::lease`).
ALTER TABLE runner_checkout ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
