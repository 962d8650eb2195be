#!/usr/bin/env bash
# The lints, in one place for `make lint` and `make test`: `lint.sh [fmt] [clippy] [wasm]` runs those
# (all three when none is named). Warnings are errors.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"

[ $# -gt 0 ] || set -- fmt clippy wasm
for step in "$@"; do
  case "$step" in
    fmt) cargo fmt --all --check ;;
    clippy) cargo clippy --workspace --all-targets -- -D warnings ;;
    wasm) cargo clippy --target wasm32-unknown-unknown -p agentsky -- -D warnings ;;
    *) die "lint.sh: no lint step '$step' (fmt, clippy, wasm)" ;;
  esac
done
