#!/usr/bin/env bash
# `make bench-memory`: what the Worker holds in memory across a long fuzz and a long session. Builds,
# starts a private wrangler dev with V8's inspector on a known port, an admin token of its own (the
# Worker shows its wasm memory to that token alone, in /v1/health) and CF-Connecting-IP trusted (as in
# production, so the fuzz's addresses make distinct per-address buckets), then runs bench/memory.mjs:
# the isolate's JS heap, the wasm linear memory and workerd's RSS before, during and after each load,
# and once idle after a GC. Loopback only. FUZZ_N=6000 requests (FUZZ_SECONDS=600 at most, FUZZ_CONC=4),
# SESSION_TURNS=200 messages, IDLE_SECONDS=15. The per-key rate limit is lifted for the run.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/env.sh"
source "$ROOT/scripts/server.sh"
cd "$ROOT"

bash scripts/build.sh
state="$ROOT/target/agentsky-memory"
INSPECTOR_PORT=$(free_port)
AGENTSKY_ADMIN_TOKEN="adm_memory_$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
export AGENTSKY_ADMIN_TOKEN
start_server "$state/wrangler" "$state/wrangler-dev.log" --var RATE_LIMIT_PER_MIN:100000000 \
  --var "ADMIN_TOKEN:$AGENTSKY_ADMIN_TOKEN" --var TRUST_CF_CONNECTING_IP:1 --log-level warn
# start_server's setsid makes wrangler the leader of its own process group: its id is the group's.
node bench/memory.mjs "$BASE_URL" "ws://127.0.0.1:$INSPECTOR_PORT" "$SERVER_PID"
