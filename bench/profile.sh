#!/usr/bin/env bash
# `make profile`: a CPU profile of tools/call list_agents and tools/list, taken in the Worker itself.
# Builds the release wasm with its name section kept (PROFILING=1 scripts/build.sh: same code, same
# optimisation, Rust names on the wasm functions), starts a private wrangler dev with V8's inspector on a
# known port, and runs bench/profile.mjs: Profiler.start, BENCH_PROFILE_N calls of each, Profiler.stop, then
# self time by function and by crate. The raw profile lands in target/agentsky-profile/*.cpuprofile.
# The next plain build (make build / make test) replaces the profiling wasm.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/env.sh"
source "$ROOT/scripts/server.sh"
cd "$ROOT"

export PROFILING=1   # wrangler dev runs scripts/build.sh too: it must keep this build
bash scripts/build.sh
state="$ROOT/target/agentsky-profile"
INSPECTOR_PORT=$(free_port)
start_server "$state/wrangler" "$state/wrangler-dev.log" --var RATE_LIMIT_PER_MIN:100000000 --log-level warn
node bench/profile.mjs "$BASE_URL" "ws://127.0.0.1:$INSPECTOR_PORT" "$state/profile-$(date -u +%Y%m%dT%H%M%SZ).cpuprofile"
