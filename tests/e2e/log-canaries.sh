#!/usr/bin/env bash
# The log holds no secret: every canary the suites planted (tests/e2e/.state/canaries.txt: API keys, a
# connector credential, a webhook secret, OpenAI keys, MCP tokens, a trace-export header) is searched for in
# every line wrangler dev logged during the run. It also checks the log is the one structured line per
# request the operator reads (JSON with the request id, face, status, duration and D1 round trips), so an
# empty or unstructured log cannot pass.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
state="$ROOT/tests/e2e/.state"
log_file="$state/logs/wrangler-dev.log"
canaries="$state/canaries.txt"
[ -s "$log_file" ] || die "no server log at $log_file"
[ -s "$canaries" ] || die "no canaries were planted ($canaries): run observability.test.mjs first"

leaks=0
while IFS= read -r c; do
  [ -n "$c" ] || continue
  if grep -qF -- "$c" "$log_file"; then
    echo "log-canaries: a planted secret (${c:0:6}…) is in $log_file:" >&2
    grep -nF -- "$c" "$log_file" | head -3 | sed "s/$(printf '%s' "$c" | sed 's/[][\\/.*^$]/\\&/g')/<CANARY>/g" >&2
    leaks=$((leaks + 1))
  fi
done <"$canaries"
[ "$leaks" -eq 0 ] || die "$leaks planted secret(s) reached the log"

lines=$(grep -c '"log":"request"' "$log_file" || true)
[ "$lines" -gt 0 ] || die "no structured request lines in $log_file"
python3 - "$log_file" <<'PY'
import json, re, sys
need = {"request_id", "trace_id", "face", "op", "workspace_id", "key_id", "status", "error_code", "duration_ms",
        "d1_round_trips", "object_calls", "outbound"}
kinds = {}
for line in open(sys.argv[1], errors="replace"):
    m = re.search(r'\{.*"log":"[a-z_]+".*\}', line)
    if not m:
        continue
    try:
        j = json.loads(m.group(0))
    except ValueError:
        continue
    if not isinstance(j, dict) or "log" not in j:
        continue
    kinds[j["log"]] = kinds.get(j["log"], 0) + 1
    if j["log"] == "request":
        missing = need - j.keys()
        assert not missing, f"a request line lacks {missing}: {line}"
print("log-canaries: structured lines by kind:", kinds, file=sys.stderr)
for k in ("request", "turn_step", "webhook_delivery"):
    assert kinds.get(k), f"no {k} line was logged"
PY
echo "log-canaries: $(wc -l <"$canaries") canaries, none in $lines request lines" >&2
