-- Company skills: named Markdown documents in the Agent Skills layout (a `SKILL.md` with `name` and
-- `description` front matter, and optional extra files), which every session of the workspace gets. Small
-- text, so the files live in the row: `files` is a JSON object of relative path → text, beside SKILL.md.
CREATE TABLE skill (
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  description TEXT NOT NULL,
  skill_md TEXT NOT NULL,
  files TEXT NOT NULL DEFAULT '{}',
  updated_by TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  PRIMARY KEY (workspace_id, name)
);
