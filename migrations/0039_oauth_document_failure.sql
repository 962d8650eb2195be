-- Client ID Metadata Documents that could not be used (unreachable, slow, not 200, too large, not JSON,
-- not a valid document). Anyone may name any URL as a `client_id` before signing in, so a failing URL is
-- not fetched again, for anyone, until five minutes after `failed_ms`; a working one is cached in
-- `oauth_client` for an hour. Rows past those five minutes are deleted whenever a failure is recorded.
CREATE TABLE oauth_document_failure (
  client_id TEXT PRIMARY KEY,
  failed_ms INTEGER NOT NULL
);
CREATE INDEX oauth_document_failure_failed ON oauth_document_failure (failed_ms);
