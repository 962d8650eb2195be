#!/usr/bin/env bash
# Builds the Worker offline: `worker-build --release` -> build/worker/shim.mjs (+ the wasm beside it).
# Returns at once when build/ is newer than every input (src/, Cargo.toml, Cargo.lock), so wrangler's
# [build] command costs nothing when nothing changed. FORCE=1 rebuilds anyway.
# PROFILING=1 builds the same release wasm but keeps its name section (Rust function names), for
# bench/profile.sh; build/.profiling marks such a build, and a plain build replaces it.
# wasm-opt is off: measured here it shrank the wasm ~18% raw but under 2% gzipped (what Workers limit and
# upload) for ~5 s per build. WASM_OPT=1 runs it anyway, from npm binaryen@132.0.0 (not a devDependency:
# `npm install --no-save binaryen@132.0.0`); Debian's binaryen 108 cannot read this output.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"

stamp=build/.agentsky-built
# help/ is prepared by build.rs (the articles table compiled in, texts and pages as assets) and wire/ is a
# dependency: both are inputs like src/.
inputs=(src help wire Cargo.toml Cargo.lock)
[ -f build.rs ] && inputs+=(build.rs)

# One build at a time (wrangler dev's watcher may call us while `make` does).
mkdir -p target
exec 9>target/.agentsky-build.lock
flock 9

profiling=${PROFILING:-0}
built_profiling=0; [ -f build/.profiling ] && built_profiling=1
if [ "${FORCE:-0}" != 1 ] && [ -f "$stamp" ] && [ -f build/worker/shim.mjs ] && [ -d build/assets/help ] &&
   [ "$profiling" = "$built_profiling" ] &&
   [ -z "$(find "${inputs[@]}" -newer "$stamp" -print -quit)" ]; then
  echo "build: up to date (build/worker/shim.mjs)" >&2
  exit 0
fi

# The three traps of TOOLCHAIN.md, checked before a 40 s build rather than after.
want=$(wasm_bindgen_lock_version)
have=$(wasm_bindgen_cli_version || true)
if [ "$have" != "$want" ]; then
  die "wasm-bindgen CLI is '${have:-not installed}' but Cargo.lock has wasm-bindgen $want.
  Install the matching CLI:  cargo install wasm-bindgen-cli --version $want --force
  (or run scripts/setup.sh, which does that)"
fi
[ -x "$ESBUILD_BIN" ] || die "no esbuild at $ESBUILD_BIN: run scripts/setup.sh (npm ci)"
command -v worker-build >/dev/null || die "worker-build not installed: run scripts/setup.sh"

args=(--release)
if [ "${WASM_OPT:-0}" = 1 ]; then
  [ -x node_modules/binaryen/bin/wasm-opt ] || die "WASM_OPT=1 needs: npm install --no-save binaryen@132.0.0"
  export WASM_OPT_BIN="$ROOT/node_modules/binaryen/bin/wasm-opt"
else
  # wasm-opt would be downloaded from GitHub: never. Cargo.toml also sets wasm-opt = false.
  args+=(--no-opt)
fi

if [ "$profiling" = 1 ]; then
  # Only the final link changes (strip is a link flag), so this costs one LTO link, not a rebuild.
  export CARGO_PROFILE_RELEASE_STRIP=false
fi

t0=$(now)
rm -f build/.profiling
touch target/.agentsky-build-start   # inputs changed during the build make the next run rebuild
worker-build "${args[@]}"
# The Help Center's pages, rendered by build.rs, are deployed beside the Worker as its static assets
# (wrangler.toml [assets]) instead of inside its wasm; the newest rendering is this build's.
help_pages=$(ls -td target/wasm32-unknown-unknown/release/build/agentsky-*/out/help 2>/dev/null | head -1)
[ -n "$help_pages" ] || die "build.rs left no rendered help pages under target/wasm32-unknown-unknown/release/build"
rm -rf build/assets/help && mkdir -p build/assets && cp -r "$help_pages" build/assets/help
touch -r target/.agentsky-build-start "$stamp"
[ "$profiling" = 1 ] && touch build/.profiling
wasm=$(ls build/worker/*.wasm build/*.wasm 2>/dev/null | head -1 || true)
if [ -n "$wasm" ]; then
  echo "build: done in $(( $(now) - t0 ))s; $wasm $(stat -c %s "$wasm") bytes, $(gzip -c "$wasm" | wc -c) gzip" >&2
fi
