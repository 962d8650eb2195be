-- A file deleted in a folder: a version with `deleted = 1` (a tombstone: no bytes, `sha256` empty). A lane's
-- tombstone hides the base's file from the lane until `land` merges it, which writes the tombstone into the
-- base; the base's older versions stay readable by number.
ALTER TABLE task_file ADD COLUMN deleted INTEGER NOT NULL DEFAULT 0;
