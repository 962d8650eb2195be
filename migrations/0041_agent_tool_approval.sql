-- Which tool uses of a coding agent (`claude-code`, `codex`) ask a person first: `outside_folder` (edits in
-- the turn's folder go ahead, shell commands and anything else ask), `every_change` (every edit and
-- command asks), `none` (nothing asks; set by admins only).
ALTER TABLE agent ADD COLUMN tool_approval TEXT NOT NULL DEFAULT 'outside_folder'
  CHECK (tool_approval IN ('outside_folder', 'every_change', 'none'));
