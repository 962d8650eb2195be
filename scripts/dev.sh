#!/usr/bin/env bash
# `make dev`: install what is missing, build, apply the local D1 migrations, then serve the Worker on
# http://127.0.0.1:${PORT:-8787} with wrangler dev (local D1, Durable Objects, R2, Queues), calling its
# cron trigger every minute. State persists in .wrangler/state between runs. Ctrl-C stops it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
PORT=${PORT:-8787}
URL="http://127.0.0.1:$PORT"

bash scripts/setup.sh
bash scripts/build.sh

# Local secrets for wrangler dev (gitignored). Production sets them with `wrangler secret put`.
if [ ! -f .dev.vars ]; then
  log "writing .dev.vars with a fresh local ADMIN_TOKEN and SECRETS_KEY"
  umask 077
  {
    echo "# Local-only secrets for wrangler dev, made by scripts/dev.sh. Never commit."
    echo "ADMIN_TOKEN=\"$(python3 -c 'import secrets; print("adm_" + secrets.token_urlsafe(32))')\""
    echo "SECRETS_KEY=\"$(python3 -c 'import secrets, base64; print(base64.b64encode(secrets.token_bytes(32)).decode())')\""
  } > .dev.vars
fi

log "wrangler d1 migrations apply DB --local"
wrangler d1 migrations apply DB --local

cat <<MSG

  agentsky is starting on $URL

  1. Get an API key (the response's key.key is your ast_... key, shown once):

     curl -s -X POST $URL/v1/accounts -H 'content-type: application/json' -d '{"name":"Ada","email":"ada@example.com"}'

  2. Connect an MCP client:

     claude mcp add --transport http agentsky $URL/v1/mcp --header "Authorization: Bearer ast_..."

     export AGENTSKY_API_KEY=ast_...
     codex mcp add agentsky --url $URL/v1/mcp --bearer-token-env-var AGENTSKY_API_KEY

  Routines fire on their own: the cron trigger is called at the start of every minute while this runs
  (by hand: curl "$URL/__scheduled?cron=*+*+*+*+*").

MSG

# wrangler dev never runs Cron Triggers by itself: call the scheduled handler at the start of every
# minute, as the platform does in production. The loop ends with this script (it checks it is alive).
cron_every_minute() {
  # Stopped, it stops its `sleep` too (a background job ignores Ctrl-C, so it would linger a minute).
  trap 'kill "$nap" 2>/dev/null; exit 0' TERM
  while kill -0 "$1" 2>/dev/null; do
    sleep $((61 - 10#$(date +%S))) &
    nap=$!
    wait "$nap"
    curl -fsS -o /dev/null "$URL/__scheduled?cron=*+*+*+*+*" 2>/dev/null || true
  done
}
cron_every_minute $$ &
CRON_PID=$!
trap 'kill "$CRON_PID" 2>/dev/null || true' EXIT

sandbox_flags
wrangler dev --local --ip 127.0.0.1 --port "$PORT" --test-scheduled "${SANDBOX_FLAGS[@]}"
