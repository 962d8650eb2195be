#!/usr/bin/env bash
# `make test`: install what is missing, host tests, the hosted sandbox's image (its CLIs and entrypoint,
# tests/sandbox_image.sh; not run without Docker) and lints, the Worker build, then the end-to-end
# suites against a private wrangler dev (tests/e2e/run.sh). Stops at the first failing step and
# exits non-zero; prints how long each step took.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"

# The console's browser suite runs in headless Chromium: setup installs it for the tests.
export AGENTSKY_NEEDS_BROWSER=1

timings=()
passed=0
run() { # run NAME CMD...
  local name=$1; shift
  local t0; t0=$(now)
  log "$name"
  if ! "$@"; then
    timings+=("$(printf '%-44s FAILED after %ss' "$name" $(( $(now) - t0 )))")
    printf '%s\n' "${timings[@]}" >&2
    printf '\033[1;31mmake test: %s failed\033[0m\n' "$name" >&2
    echo "steps: $passed passed, 1 failed"
    exit 1
  fi
  passed=$((passed + 1))
  timings+=("$(printf '%-44s %5ss' "$name" $(( $(now) - t0 )))")
}

run "setup"                                   bash scripts/setup.sh
run "cargo fmt --check"                       bash scripts/lint.sh fmt
run "cargo test (host, with the sky CLI)"     cargo test --workspace
run "sandbox image (tests/sandbox_image.sh)"  bash tests/sandbox_image.sh
run "cargo clippy --all-targets (host)"       bash scripts/lint.sh clippy
run "cargo clippy (wasm32)"                   bash scripts/lint.sh wasm
run "build (worker-build --release)"          bash scripts/build.sh
run "end-to-end (tests/e2e/run.sh)"           bash tests/e2e/run.sh

echo >&2
printf '%s\n' "${timings[@]}" >&2
log "make test: all steps passed"
echo "steps: $passed passed, 0 failed"
