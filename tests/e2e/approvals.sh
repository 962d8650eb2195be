#!/usr/bin/env bash
# End-to-end for a request's life (issue 15) against wrangler dev: `sky approvals` answering a plan in a
# pseudo-terminal, `list_requests` woken within a second by a new request, stopping a session releasing its
# waiting agent within a second, identical access requests made one, and expiry.
# Uses the server of tests/e2e/run.sh when AGENTSKY_URL is set, else starts its own (which needs
# SECRETS_KEY in .dev.vars for the target it connects).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
cd "$ROOT"
cleanup() { if declare -F stop_server >/dev/null; then stop_server; fi; }
source "$ROOT/tests/e2e/lib.sh"
e2e_server approvals
SKY="$ROOT/target/release/sky"
[ -x "$SKY" ] || cargo build --release -q -p sky
AGENTSKY_URL="$URL" SKY="$SKY" python3 tests/e2e/approvals.py
