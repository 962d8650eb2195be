-- What proves a deploy command (issue 13). A runner reports, with its own token and for the turn its lease
-- holds, the exit status it observed of a provider CLI command it ran itself under a live grant; when the
-- command exited 0 and the grant covers `deploy`, the report is a proof here. Session tokens cannot make
-- one. `remember_command deploy` accepts exactly a command proven for its session and target. The command
-- is kept as the SHA-256 of its argv: matched, never shown.
CREATE TABLE deploy_proof (
  proof_id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  session_id TEXT NOT NULL,
  connector_id TEXT NOT NULL,
  grant_id TEXT NOT NULL,
  runner_id TEXT NOT NULL,
  argv_sha256 TEXT NOT NULL,
  created_ms INTEGER NOT NULL
);
CREATE INDEX deploy_proof_session ON deploy_proof(session_id, connector_id, argv_sha256);
