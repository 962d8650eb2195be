# Shared by the shell end-to-end scripts (cli.sh, approvals.sh, runner.sh, push.sh), sourced after
# scripts/env.sh: their pass/fail lines, the server they test, the sky binary, and JSON and MCP helpers.

passed=0
ok() { passed=$((passed + 1)); printf '  ok   %s\n' "$*" >&2; }
fail() { printf '\033[1;31m  FAIL %s\033[0m\n' "$*" >&2; exit 1; }

# e2e_server NAME: the server of tests/e2e/run.sh when AGENTSKY_URL is set, else a private one with its
# state in tests/e2e/.state/NAME-wrangler. Sets URL. The caller's `cleanup` (its EXIT trap) must call
# stop_server when that is defined.
e2e_server() {
  if [ -z "${AGENTSKY_URL:-}" ]; then
    source "$ROOT/scripts/server.sh"
    start_server "$ROOT/tests/e2e/.state/$1-wrangler" "$ROOT/tests/e2e/.state/logs/$1-wrangler-dev.log"
    trap cleanup EXIT
    AGENTSKY_URL=$BASE_URL
  fi
  URL=${AGENTSKY_URL%/}
}

# sky_binary NAME: the CLI under test, $SKY when given, else a release build made now. Sets SKY.
sky_binary() {
  if [ -z "${SKY:-}" ]; then
    log "$1: cargo build -p sky --release"
    cargo build -p sky --release --quiet
    SKY="$ROOT/target/release/sky"
  fi
  [ -x "$SKY" ] || fail "no sky binary at $SKY"
}

# JSON with python3, MCP as plain JSON-RPC with curl (on $URL with $KEY).
field() { python3 -c 'import json,sys; v=json.loads(sys.argv[1]); r=eval(sys.argv[2]); print(r if isinstance(r,str) else json.dumps(r))' "$1" "$2"; }
mcp() { # TOOL ARGS_JSON -> the tool's structuredContent (fails on any error)
  local body reply
  body=$(python3 -c 'import json,sys; print(json.dumps({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":sys.argv[1],"arguments":json.loads(sys.argv[2])}}))' "$1" "$2")
  reply=$(curl -sS --max-time 90 -X POST "$URL/v1/mcp" -H "Authorization: Bearer $KEY" -H 'content-type: application/json' \
    -H 'accept: application/json, text/event-stream' -H 'mcp-protocol-version: 2025-06-18' -d "$body") || fail "$1: curl failed"
  python3 -c 'import json,sys; r=json.loads(sys.argv[1]); res=r.get("result") or {}
if "error" in r or res.get("isError"): sys.exit("%s failed: %s" % (sys.argv[2], sys.argv[1][:600]))
print(json.dumps(res["structuredContent"]))' "$reply" "$1" || fail "$1"
}
texts() { field "$1" '"\n".join("%s: %s" % (e["type"], e.get("text") or e.get("message") or "") for e in v)'; }
