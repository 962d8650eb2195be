#!/usr/bin/env bash
# A private wrangler dev for a test that must own (and crash) its server, e.g. restart.test.mjs.
#   own-server.sh fresh  STATE_DIR LOG_FILE [wrangler dev args...]   wipe + migrate STATE_DIR, free port
#   own-server.sh resume STATE_DIR LOG_FILE [wrangler dev args...]   same STATE_DIR, port $PORT (keep it)
# Prints one line `READY <base_url> <server_pgid>` once GET /v1/health answers, then waits for the server.
# SIGTERM to this script stops the server (scripts/server.sh's trap); the caller crashes the server with
# SIGKILL to the process group <server_pgid> (wrangler and workerd, nothing else).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
source "$ROOT/scripts/server.sh"
cd "$ROOT"

mode=$1 state=$2 logf=$3; shift 3
case $mode in
  fresh) unset PORT; start_server "$state" "$logf" "$@" ;;
  resume) [ -n "${PORT:-}" ] || die "own-server.sh resume needs PORT"; resume_server "$state" "$logf" "$@" ;;
  *) die "own-server.sh: mode must be fresh or resume (got $mode)" ;;
esac
echo "READY $BASE_URL $SERVER_PID"
wait "$SERVER_PID" || true
