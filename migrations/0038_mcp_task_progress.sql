-- How far an MCP task has read its turn, so each tasks/get continues where the last one stopped. One poll
-- reads at most 10 pages of 200 events; rereading from the turn's start on every poll left a turn longer
-- than that `working` forever. Kept with the position: the agent's last reply seen so far (it may lie in
-- pages an earlier poll read) and how many events of the turn were read.
-- read_seq: the last event read (NULL: nothing read yet, start at the task's cursor).
ALTER TABLE mcp_task ADD COLUMN read_seq INTEGER;
ALTER TABLE mcp_task ADD COLUMN read_reply TEXT;
ALTER TABLE mcp_task ADD COLUMN read_events INTEGER NOT NULL DEFAULT 0;
