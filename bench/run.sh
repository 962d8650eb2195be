#!/usr/bin/env bash
# `make bench` (a measurement, not a test): a private wrangler dev on a free loopback port with fresh
# state, then bench/load.mjs: p50/p90/p99 and req/s of GET /v1/health (the floor), MCP tools/list and
# tools/call list_agents (on one connection, then BENCH_CONC), the x-d1-queries header per route, the
# tool list's bytes and what a model is shown of it, and the wasm size; then, on the same server,
# sessions and turns with the echo harness: start_session and send_message latency and throughput, a
# turn's round trip, the wake-up latency of a waiting read_session (reply appended → read returns), and
# read_session page latency on a 10-event log against a 10,006-event one; then hosted sandboxes
# (bench/sandbox.mjs: a cold turn booting one, a warm turn, a turn waking one, the image's size). Loopback
# only.
# BENCH_N=2000 requests per route, BENCH_WARMUP=200, BENCH_SESSIONS=200 starts/sends per row,
# BENCH_CONC=8, BENCH_WAKE_N=50 turn samples, BENCH_WAKE_PAR=5, BENCH_PAGE_N=200 reads per page row.
# The per-key rate limit is lifted for the run.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/env.sh"
source "$ROOT/scripts/server.sh"
cd "$ROOT"

wasm=$(ls build/worker/*.wasm build/*.wasm 2>/dev/null | head -1 || true)
[ -n "$wasm" ] || die "no wasm under build/: run scripts/build.sh (make build) first"
export BENCH_WASM="$ROOT/$wasm"

state="$ROOT/target/agentsky-bench"
bash scripts/sandbox.sh
start_server "$state/wrangler" "$state/wrangler-dev.log" --var RATE_LIMIT_PER_MIN:100000000 --log-level warn \
  --var SANDBOX_IDLE_S:3
node bench/load.mjs "$BASE_URL"
node bench/sandbox.mjs "$BASE_URL"
