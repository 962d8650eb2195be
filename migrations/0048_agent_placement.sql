-- Where an agent's turns run: `runner` (a person's `sky runner`) or `hosted` (a sandbox agentsky starts
-- for the session). A hosted `runner`-harness agent runs `command` (one shell line, in the turn's folder,
-- the message on stdin); `egress` is the JSON list of host names its sandbox may reach besides the
-- defaults (the package registries its CLIs need, the APIs of the workspace's targets).
ALTER TABLE agent ADD COLUMN placement TEXT NOT NULL DEFAULT 'runner' CHECK (placement IN ('runner', 'hosted'));
ALTER TABLE agent ADD COLUMN command TEXT;
ALTER TABLE agent ADD COLUMN egress TEXT NOT NULL DEFAULT '[]';

-- A hosted session's turns are claimed only by its own sandbox's runner: `runner.session_id` names that
-- session (NULL for a person's runner, which claims only turns that are not hosted).
ALTER TABLE runner_turn ADD COLUMN hosted INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runner ADD COLUMN session_id TEXT;
CREATE UNIQUE INDEX runner_session ON runner(session_id) WHERE session_id IS NOT NULL;

-- A checkout queued for the session's own sandbox (no person's runner was online) is its sandbox's alone;
-- the others are people's runners'.
ALTER TABLE runner_checkout ADD COLUMN hosted INTEGER NOT NULL DEFAULT 0;
