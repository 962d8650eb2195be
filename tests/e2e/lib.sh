# Shared by the shell end-to-end scripts (cli.sh, runner.sh), sourced after scripts/env.sh: their
# pass/fail lines, and the server they test.

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
