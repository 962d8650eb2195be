#!/usr/bin/env bash
# Installs whatever the build and the tests need and is missing; a no-op in about a second when all is
# there. Safe to run again and again. Reaches only crates.io, npm and PyPI.
#   - rustup target wasm32-unknown-unknown
#   - worker-build (pinned) and wasm-bindgen-cli (= the wasm-bindgen crate in Cargo.lock), by cargo install
#   - npm ci: wrangler, Node 22, the MCP SDKs and the conformance suite (package-lock.json)
#   - .venv: the Python MCP client and pytest (requirements-e2e.txt)
#   - ssh-agent, ssh-add and ssh-keygen (the runner's ssh e2e), from the system's packages when missing
#   - Chromium (the console's browser suite drives it headless), from the system's packages when missing
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"

command -v cargo >/dev/null || die "cargo not found: install Rust with rustup first (https://rustup.rs)"
command -v npm >/dev/null || die "npm not found: install Node.js (any version >= 18; Node 22 itself comes from npm)"
command -v python3 >/dev/null || die "python3 not found (needed for the Python end-to-end tests)"

# 1. The wasm target.
if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  log "rustup target add wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi

# 2 and 3. The two build tools, compiled from crates.io once: worker-build (pinned; --locked, its own
#    lockfile is known to build) and the wasm-bindgen CLI at exactly the crate's version (the two must
#    match byte-for-byte in their schema, and worker-build would otherwise try to download one). Both run
#    for about a second per build, so they are compiled with little optimization: worker-build with none
#    (3.5 min beside the others, against 8.5 alone optimized), the CLI at opt-level 1 (it rewrites a 5 MB wasm
#    on every build: 1.02 s, as fast as optimized). A fresh `make dev` was ready in 4 min 56 s on 2 cores.
#    They compile side by side, and beside them the Worker's own dependencies for wasm32 (what
#    scripts/build.sh would otherwise compile next), so a fresh machine waits for the longest, not the sum.
fast_install() { # fast_install OPT_LEVEL CRATE ARGS...: cargo install with a quick release profile
  local opt=$1; shift
  CARGO_PROFILE_RELEASE_OPT_LEVEL=$opt CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=256 \
    CARGO_PROFILE_RELEASE_DEBUG=0 cargo install "$@"
}
jobs_started=()
start_job() { # start_job NAME CMD...: runs in the background, its output in target/setup-NAME.log
  mkdir -p "$ROOT/target"
  ( "${@:2}" >"$ROOT/target/setup-$1.log" 2>&1 ) &
  jobs_started+=("$1:$!")
}
have=$(worker-build --version 2>/dev/null || true)
if [ "$have" != "$WORKER_BUILD_VERSION" ]; then
  [ -n "$have" ] && log "worker-build is $have, want $WORKER_BUILD_VERSION: reinstalling"
  start_job worker-build fast_install 0 worker-build --version "$WORKER_BUILD_VERSION" --locked --force
fi
want=$(wasm_bindgen_lock_version)
[ -n "$want" ] || die "no wasm-bindgen package in Cargo.lock: run 'cargo generate-lockfile' first"
have=$(wasm_bindgen_cli_version || true)
if [ "$have" != "$want" ]; then
  [ -n "$have" ] && log "wasm-bindgen CLI is $have but Cargo.lock has wasm-bindgen $want: reinstalling the CLI at $want"
  # Without --locked: the CLI's published lockfile does not build here.
  start_job wasm-bindgen-cli fast_install 1 wasm-bindgen-cli --version "$want" --force
fi
if [ ${#jobs_started[@]} -gt 0 ]; then
  # The same command and environment worker-build runs, so its own cargo build finds this done.
  [ -d target/wasm32-unknown-unknown/release ] ||
    start_job worker-deps env WASM_BINDGEN_USE_JS_SYS=1 cargo build --lib --release --target wasm32-unknown-unknown
  t0=$(now)
  log "compiling, once, side by side: ${jobs_started[*]%%:*} (measured 4 min 36 s on 2 cores; logs in target/setup-*.log)"
fi
wait_jobs() {
  local job name pid
  for job in "${jobs_started[@]}"; do
    name=${job%%:*}; pid=${job##*:}
    if ! wait "$pid"; then
      tail -30 "$ROOT/target/setup-$name.log" >&2
      die "$name failed to compile (full log: target/setup-$name.log)"
    fi
    log "$name ready after $(( $(now) - t0 ))s"
  done
  jobs_started=()
}

# 4. npm packages, from the lockfile. The stamp makes the no-change case free.
stamp=node_modules/.agentsky-lock.sha256
sum=$(sha256sum package-lock.json package.json | sha256sum | cut -c1-64)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$sum" ] || [ ! -x node_modules/.bin/wrangler ]; then
  log "npm ci"
  npm ci --no-audit --no-fund --loglevel=error
  echo "$sum" > "$stamp"
fi
[ -x "$ESBUILD_BIN" ] || die "esbuild binary missing at $ESBUILD_BIN after npm ci"
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 22 ] || die "node on PATH is $(node --version), want >= 22 from node_modules/.bin"

# 5. Python venv for the Python MCP client tests.
vstamp="$VENV/.agentsky-req.sha256"
vsum=$(sha256sum requirements-e2e.txt | cut -c1-64)
if [ ! -x "$VENV/bin/python" ] || [ ! -f "$vstamp" ] || [ "$(cat "$vstamp")" != "$vsum" ]; then
  log "python venv .venv with requirements-e2e.txt"
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet -r requirements-e2e.txt
  echo "$vsum" > "$vstamp"
fi

# 6. OpenSSH's client tools: the runner loads SSH grants into a per-turn ssh-agent. Installed from the
#    system's packages when missing and possible; else the ssh e2e checks say SKIP.
if ! command -v ssh-agent >/dev/null || ! command -v ssh-add >/dev/null || ! command -v ssh-keygen >/dev/null; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    log "apt-get install openssh-client"
    apt-get install -y --no-install-recommends openssh-client >/dev/null 2>&1 \
      || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y --no-install-recommends openssh-client >/dev/null 2>&1; } \
      || log "could not install openssh-client: the ssh e2e checks will be skipped"
  else
    log "ssh-agent/ssh-add/ssh-keygen missing: install OpenSSH's client for the ssh e2e checks"
  fi
fi


# 7. Chromium for the console's browser suite (tests/e2e/console.test.mjs drives it with playwright-core,
#    which never downloads a browser of its own). `make test` needs it (AGENTSKY_NEEDS_BROWSER=1); `make dev`
#    does not.
if [ "${AGENTSKY_NEEDS_BROWSER:-}" = 1 ] && ! command -v chromium >/dev/null; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    log "apt-get install chromium (the console's browser tests)"
    apt-get install -y --no-install-recommends chromium >/dev/null 2>&1 \
      || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y --no-install-recommends chromium >/dev/null 2>&1; } \
      || die "could not install chromium: the console's browser tests need it (apt-get install chromium)"
  else
    die "chromium is missing: install it (Debian: apt-get install chromium); the console's browser tests need it"
  fi
fi

wait_jobs

# 8. Hosted sandboxes: Docker and the sandbox's images (scripts/sandbox.sh). Without Docker it says so, and
#    the server runs with hosted placement answering that error.
bash "$ROOT/scripts/sandbox.sh"

have=$(wasm_bindgen_cli_version || true)
[ "$have" = "$(wasm_bindgen_lock_version)" ] || die "wasm-bindgen CLI reports '$have', want $(wasm_bindgen_lock_version)"
log "setup ok: worker-build $(worker-build --version), wasm-bindgen $(wasm_bindgen_cli_version), node $(node --version), wrangler $(wrangler --version 2>/dev/null | tail -1)"
