#!/usr/bin/env bash
# End-to-end: a private `wrangler dev` (local D1/DO/R2/Queues/cron) on a free loopback port, fresh state,
# the conformance fixture tools switched on (CONFORMANCE_FIXTURES=1 serves them without auth at
# POST /v1/conformance/mcp), then the TypeScript clients, the Python clients and the official
# conformance suite against it. The server is always stopped; any failure makes the exit non-zero.
# restart.test.mjs starts (and crashes) a second, private server of its own (tests/e2e/own-server.sh).
# Expects scripts/setup.sh and scripts/build.sh to have run (make test does both).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
source "$ROOT/scripts/server.sh"
cd "$ROOT"

state="$ROOT/tests/e2e/.state"
# Secrets the suites plant to prove none reaches the log (log-canaries.sh, last): this run's only.
rm -f "$state/canaries.txt"
# ADMIN_TOKEN: the tests add wallet credit (POST /v1/workspaces/{slug}/credit). SECRETS_KEY: workspace
# secrets can be stored (the openai harness's endpoint and key). PRICES: openai.test.mjs asserts charges
# at this table's rate for its model (cents per million input / output tokens). ALLOW_LOOPBACK_HTTP: the
# fake model endpoints, MCP servers and webhook receivers the tests start listen on loopback, which only
# this opt-in allows. WEBHOOK_RETRY_SCHEDULE: webhooks.test.mjs sees retries and the dead letter in seconds.
# STRIPE_*: money in talks to a fake Stripe API on loopback (tests/e2e/stripe.mjs, started below on the
# port chosen here), and the tests sign the events they post to the webhook with this webhook secret.
export AGENTSKY_ADMIN_TOKEN="e2e-admin-$(python3 -c 'import secrets; print(secrets.token_hex(12))')"
stripe_port=$(free_port)
export AGENTSKY_E2E_STRIPE_URL="http://127.0.0.1:$stripe_port"
export AGENTSKY_E2E_STRIPE_KEY="sk_test_e2e_$(python3 -c 'import secrets; print(secrets.token_hex(8))')"
export AGENTSKY_E2E_STRIPE_WEBHOOK_SECRET="whsec_e2e_$(python3 -c 'import secrets; print(secrets.token_hex(12))')"
# GITHUB_API_URL, AWS_STS_URL, GCP_IAM_URL, GCP_STS_URL: GitHub App, AWS role and Google service-account
# targets mint their grants' credentials at fakes of GitHub, AWS STS and Google on loopback
# (tests/e2e/providers.mjs), which check the app's JWTs, the key pair's SigV4 and the account's assertions;
# SLACK_API_URL: a workspace's Slack app posts and updates requests at a fake of Slack's Web API.
github_port=$(free_port)
sts_port=$(free_port)
google_port=$(free_port)
slack_port=$(free_port)
export AGENTSKY_E2E_SLACK_URL="http://127.0.0.1:$slack_port"
export AGENTSKY_E2E_SLACK_TOKEN="xoxb-e2e-$(python3 -c 'import secrets; print(secrets.token_hex(12))')"
export AGENTSKY_E2E_GOOGLE_URL="http://127.0.0.1:$google_port"
export AGENTSKY_E2E_GITHUB_URL="http://127.0.0.1:$github_port"
export AGENTSKY_E2E_STS_URL="http://127.0.0.1:$sts_port"
export AGENTSKY_E2E_AWS_KEY_ID="AKIAE2EAGENTSKY00000"
export AGENTSKY_E2E_AWS_SECRET="e2e-aws-secret-$(python3 -c 'import secrets; print(secrets.token_hex(12))')"
# The sandbox's image carries this tree's `sky`: brought up to date (and Docker checked) before the server
# builds the image.
bash scripts/sandbox.sh
# REQUEST_LOG=all: log-canaries.sh reads every request's line for planted secrets, not only failures'
start_server "$state/wrangler" "$state/logs/wrangler-dev.log" --var CONFORMANCE_FIXTURES:1 --var REQUEST_LOG:all \
  --var "ADMIN_TOKEN:$AGENTSKY_ADMIN_TOKEN" --var "SECRETS_KEY:e2e-secrets-key-not-for-production" \
  --var 'PRICES:{"e2e-priced":[1000000,2000000]}' --var ALLOW_LOOPBACK_HTTP:1 --var WEBHOOK_RETRY_SCHEDULE:1,1,1 \
  --var "STRIPE_API_BASE:$AGENTSKY_E2E_STRIPE_URL" --var "STRIPE_SECRET_KEY:$AGENTSKY_E2E_STRIPE_KEY" \
  --var "STRIPE_WEBHOOK_SECRET:$AGENTSKY_E2E_STRIPE_WEBHOOK_SECRET" --var "GITHUB_API_URL:$AGENTSKY_E2E_GITHUB_URL" \
  --var "AWS_STS_URL:$AGENTSKY_E2E_STS_URL" --var "GCP_IAM_URL:$AGENTSKY_E2E_GOOGLE_URL" \
  --var "GCP_STS_URL:$AGENTSKY_E2E_GOOGLE_URL" --var "SLACK_API_URL:$AGENTSKY_E2E_SLACK_URL" \
  --var SANDBOX_IDLE_S:4 --var SANDBOX_PRICE_CENTS_PER_HOUR:360
export AGENTSKY_URL="$BASE_URL"
node tests/e2e/stripe.mjs "$stripe_port" "$AGENTSKY_E2E_STRIPE_KEY" >"$state/logs/stripe.log" 2>&1 &
stripe_pid=$!
node tests/e2e/providers.mjs "$github_port" "$sts_port" "$google_port" "$slack_port" >"$state/logs/providers.log" 2>&1 &
providers_pid=$!
trap 'kill "$stripe_pid" "$providers_pid" 2>/dev/null || true; stop_server' EXIT
until curl -s -o /dev/null --max-time 2 "$AGENTSKY_E2E_STRIPE_URL/"; do
  kill -0 "$stripe_pid" 2>/dev/null || { cat "$state/logs/stripe.log" >&2; die "the fake Stripe did not start"; }
  sleep 0.2
done
until curl -s -o /dev/null --max-time 2 "$AGENTSKY_E2E_GITHUB_URL/" && curl -s -o /dev/null --max-time 2 "$AGENTSKY_E2E_STS_URL/" \
  && curl -s -o /dev/null --max-time 2 "$AGENTSKY_E2E_GOOGLE_URL/" && curl -s -o /dev/null --max-time 2 "$AGENTSKY_E2E_SLACK_URL/"; do
  kill -0 "$providers_pid" 2>/dev/null || { cat "$state/logs/providers.log" >&2; die "the fake providers did not start"; }
  sleep 0.2
done
# Where the local R2 keeps its objects: routines.test.mjs checks the cron's purge there.
export AGENTSKY_E2E_R2_DIR="$state/wrangler/v3/r2"

failed=()
step() { # step NAME CMD...: run, time, remember a failure, go on with the next suite
  local name=$1; shift
  local t0; t0=$(now)
  log "e2e: $name"
  if "$@"; then log "e2e: $name passed ($(( $(now) - t0 ))s)"
  else log "e2e: $name FAILED ($(( $(now) - t0 ))s)"; failed+=("$name"); fi
}

# `tests/e2e/run.sh FILE...` runs only those suites (`.mjs` with node, `.py` with pytest, `.sh` with
# bash) against the same private server: the quick loop while working on one of them.
if [ $# -gt 0 ]; then
  for f in "$@"; do
    case "$f" in
      *.mjs) step "$f" node --test --test-reporter=spec --test-concurrency=1 "$f" ;;
      *.py) step "$f" "$VENV/bin/python" -m pytest -q -p no:cacheprovider "$f" ;;
      *.sh) step "$f" bash "$f" ;;
      *) die "do not know how to run $f" ;;
    esac
  done
  [ ${#failed[@]} -eq 0 ] || { echo "e2e: failed: ${failed[*]} (server log: $state/logs/wrangler-dev.log)" >&2; exit 1; }
  exit 0
fi

shopt -s nullglob
ts_tests=(tests/e2e/*.test.mjs)
[ ${#ts_tests[@]} -gt 0 ] || die "no tests/e2e/*.test.mjs found"
step "TypeScript clients (node --test)" node --test --test-reporter=spec --test-concurrency=1 "${ts_tests[@]}"
step "Python clients (pytest)" "$VENV/bin/python" -m pytest -q -p no:cacheprovider tests/e2e/py

if [ -x tests/conformance/run.sh ] || [ -f tests/conformance/run.sh ]; then
  step "MCP conformance suite" bash tests/conformance/run.sh "$BASE_URL/v1/conformance/mcp"
else
  printf '\n\033[1;33m!!! tests/conformance/run.sh is missing: the MCP conformance suite was NOT run !!!\033[0m\n\n' >&2
fi

step "sky CLI: device sign-in, npx setup (tests/e2e/cli.sh)" bash tests/e2e/cli.sh
step "sky approvals and a request's life (tests/e2e/approvals.sh)" bash tests/e2e/approvals.sh
step "sky runner: a script agent's turns, a killed runner's turn re-claimed (tests/e2e/runner.sh)" bash tests/e2e/runner.sh
step "deletes in task folders land (tests/e2e/deletes.sh)" bash tests/e2e/deletes.sh
step "land pushes to a git remote; a shim deploy's credential stays with the runner (tests/e2e/push.sh)" bash tests/e2e/push.sh

step "make deploy-check refuses broken production configs (tests/e2e/deploy-check.sh)" bash tests/e2e/deploy-check.sh

# Last, over everything the suites made the server log: no planted secret in any line.
step "no secret in the server log (tests/e2e/log-canaries.sh)" bash tests/e2e/log-canaries.sh

if [ ${#failed[@]} -gt 0 ]; then
  echo "e2e: failed: ${failed[*]} (server log: $state/logs/wrangler-dev.log)" >&2
  exit 1
fi
log "e2e: all suites passed"
