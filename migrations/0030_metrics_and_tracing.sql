-- Operability: per-minute rollups of what each workspace (and each of its agents) did, and where a
-- workspace sends its turns' traces.

-- One row per workspace, agent ('' for calls no agent made) and UTC minute, upserted by each request and
-- turn: counters add, the latency histogram (bounds in src/rules/metrics.rs) adds one to one bucket,
-- open_requests keeps the highest count sampled in the minute. Old minutes are pruned by the cron.
CREATE TABLE metric_minute (
  workspace_id TEXT NOT NULL,
  agent_id TEXT NOT NULL DEFAULT '',
  minute INTEGER NOT NULL,
  calls INTEGER NOT NULL DEFAULT 0,
  errors INTEGER NOT NULL DEFAULT 0,
  latency_sum_ms INTEGER NOT NULL DEFAULT 0,
  latency_max_ms INTEGER NOT NULL DEFAULT 0,
  h0 INTEGER NOT NULL DEFAULT 0, h1 INTEGER NOT NULL DEFAULT 0, h2 INTEGER NOT NULL DEFAULT 0,
  h3 INTEGER NOT NULL DEFAULT 0, h4 INTEGER NOT NULL DEFAULT 0, h5 INTEGER NOT NULL DEFAULT 0,
  h6 INTEGER NOT NULL DEFAULT 0, h7 INTEGER NOT NULL DEFAULT 0, h8 INTEGER NOT NULL DEFAULT 0,
  h9 INTEGER NOT NULL DEFAULT 0, h10 INTEGER NOT NULL DEFAULT 0, h11 INTEGER NOT NULL DEFAULT 0,
  turns INTEGER NOT NULL DEFAULT 0,
  turn_errors INTEGER NOT NULL DEFAULT 0,
  spend_cents INTEGER NOT NULL DEFAULT 0,
  input_tokens INTEGER NOT NULL DEFAULT 0,
  output_tokens INTEGER NOT NULL DEFAULT 0,
  open_requests INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (workspace_id, minute, agent_id)
) WITHOUT ROWID;
CREATE INDEX metric_minute_age ON metric_minute(minute);

-- Where a workspace's turns are exported as OpenTelemetry spans (OTLP/HTTP JSON), with one optional
-- header (an ingest key) sealed like a secret.
CREATE TABLE trace_export (
  workspace_id TEXT PRIMARY KEY REFERENCES workspace(workspace_id) ON DELETE CASCADE,
  url TEXT NOT NULL,
  header_name TEXT,
  header_sealed TEXT,
  updated_ms INTEGER NOT NULL
);
