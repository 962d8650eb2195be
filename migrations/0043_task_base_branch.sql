-- The name a task's base shows as (`project_activity`'s `base`, a session's branch without lanes) and the
-- branch a new remote pushes to: `main` unless the task says otherwise.
ALTER TABLE task ADD COLUMN base_branch TEXT NOT NULL DEFAULT 'main';
