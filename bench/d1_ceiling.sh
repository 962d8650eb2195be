#!/usr/bin/env bash
# How fast a request can be once it reads D1 at all, under the same `wrangler dev` as everything else:
# req/s of a hello-world Worker against the same Worker after one `SELECT 1`, and after one batch shaped
# like a read tool's here (key touch and lookup, the per-key count, a 20-row read), on 1 and 8
# connections, RUNS times (default 3), interleaved. Every MCP call that checks its key (revocation counts
# from the next call) makes at least that one round trip, so the second column is the ceiling of any such
# server here, ours and the TypeScript anchor's alike; the third is the ceiling of agentsky's reads as they
# are built, with none of its own code. Needs wrk (installed from Debian's packages if missing).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/env.sh"
source "$ROOT/scripts/server.sh"
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
dir=$ROOT/target/d1-ceiling
rm -rf "$dir"; mkdir -p "$dir"
port=$(free_port)
(cd "$ROOT/bench/d1-ceiling" && exec setsid wrangler dev --local --ip 127.0.0.1 --port "$port" \
  --inspector-port "$(free_port)" --persist-to "$dir/state" --log-level warn </dev/null >"$dir/dev.log" 2>&1) &
pid=$!
trap 'kill -- -"$pid" 2>/dev/null || true' EXIT
until curl -s -o /dev/null "http://127.0.0.1:$port/d1"; do
  kill -0 "$pid" 2>/dev/null || { cat "$dir/dev.log" >&2; die "wrangler dev exited"; }
  sleep 0.5
done
rps() { wrk -t1 -c"$1" -d"${DURATION:-6s}" "http://127.0.0.1:$port$2" | awk '/Requests\/sec/{print $2}'; }
rps 8 / >/dev/null; rps 8 /d1 >/dev/null; rps 8 /batch >/dev/null   # warm-up
printf '%-4s %-6s %12s %14s %8s %14s %8s\n' run conns "hello req/s" "+1 D1 req/s" ratio "+batch req/s" ratio
ratio() { python3 -c "print(f'{$1/$2:.2f}')"; }
for run in $(seq 1 "${RUNS:-3}"); do
  for c in 1 8; do
    a=$(rps "$c" /); b=$(rps "$c" /d1); t=$(rps "$c" /batch)
    printf '%-4s %-6s %12s %14s %8s %14s %8s\n' "$run" "$c" "$a" "$b" "$(ratio "$b" "$a")" "$t" "$(ratio "$t" "$a")"
  done
done
