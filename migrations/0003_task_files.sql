-- A task's shared folder. Every write is a new version with who wrote it and when; the bytes live in R2
-- under their SHA-256 (`blobs/<sha256>`), written once however often they recur, so D1 holds only this
-- index. `lane` is the session whose unlanded copy this is ('' = the task's base folder).
CREATE TABLE task_file (
  task_id TEXT NOT NULL,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  lane TEXT NOT NULL DEFAULT '',
  path TEXT NOT NULL,
  version INTEGER NOT NULL,
  size_bytes INTEGER NOT NULL,
  sha256 TEXT NOT NULL,
  writer_session_id TEXT,
  writer_key_id TEXT,
  created_ms INTEGER NOT NULL,
  PRIMARY KEY (task_id, lane, path, version)
);
CREATE INDEX task_file_writer ON task_file(writer_session_id, path);
