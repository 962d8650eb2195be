#!/usr/bin/env bash
# The hosted sandbox's image, built from build/sandbox/ as wrangler builds it (the classic builder: docker's
# layer cache makes it seconds once built), then run as the image's user with no network:
# - the agent CLIs the claude-code and codex harnesses run, git and sky answer `--version`; the user is agent;
# - the entrypoint, given a made-up CA at Cloudflare's path and a stand-in `sky` that checks what it was
#   started with: `runner --hosted`, SSL_CERT_FILE (and git's, curl's, Python's) naming a bundle of the
#   system's CAs and that one, NODE_EXTRA_CA_CERTS naming it; without the CA, none of them set.
# Prints PASS/FAIL per check and exits non-zero on a failure. Without Docker or build/sandbox/ (its status
# not `ready`, scripts/sandbox.sh), prints "not run: <why>" and exits 0. A CLI that node_modules lacks (no
# `npm ci`: the image then holds none, scripts/sandbox.sh says so) is reported not run, never passed.
# Usage: bash tests/sandbox_image.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/env.sh"
cd "$ROOT"
image=agentsky/sandbox-check
ca_path=/etc/cloudflare/certs/cloudflare-containers-ca.crt

not_run() { echo "sandbox image: not run: $1"; exit 0; }
status=$(cat build/sandbox/status 2>/dev/null || echo "scripts/sandbox.sh has not run")
[ "$status" = ready ] || not_run "$status"
docker info >/dev/null 2>&1 || not_run "the Docker daemon is not running on this machine"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! DOCKER_BUILDKIT=0 docker build -q -t "$image" build/sandbox >/dev/null 2>"$tmp/build.log"; then
  cat "$tmp/build.log" >&2
  echo "FAIL docker build build/sandbox"
  exit 1
fi

passed=0 failed=0 skipped=0
# check NAME WANT DOCKER_RUN_ARGS...: passes when the container exits 0 and its output holds WANT.
check() {
  local name=$1 want=$2 out
  shift 2
  if out=$(docker run --rm --network none "$@" 2>&1) && grep -qF -- "$want" <<<"$out"; then
    echo "PASS $name: $(head -1 <<<"$out")"
    passed=$((passed + 1))
  else
    echo "FAIL $name (wanted \"$want\"):"
    sed 's/^/    /' <<<"$out"
    failed=$((failed + 1))
  fi
}

for cli in "claude Claude Code" "codex codex-cli"; do
  read -r name want <<<"$cli"
  if [ -e "node_modules/.bin/$name" ]; then
    check "$name --version" "$want" "$image" "$name" --version
  else
    echo "not run: $name --version (node_modules has no $name: npm ci)"
    skipped=$((skipped + 1))
  fi
done
check "git --version" "git version" "$image" git --version
check "sky --version" "sky " "$image" sky --version
check "runs as agent" "uid=1000(agent)" "$image" id

# The stand-in sky: says `entrypoint ok` when started as the entrypoint should start it.
openssl req -x509 -newkey rsa:2048 -nodes -keyout /dev/null -out "$tmp/ca.crt" -days 1 \
  -subj "/CN=agentsky test egress CA" >/dev/null 2>&1
cat > "$tmp/sky" <<'SH'
#!/bin/sh
ca=/etc/cloudflare/certs/cloudflare-containers-ca.crt
[ "$*" = "runner --hosted" ] || { echo "started with: $*"; exit 1; }
if [ -f "$ca" ]; then
  for v in "$GIT_SSL_CAINFO" "$CURL_CA_BUNDLE" "$REQUESTS_CA_BUNDLE"; do
    [ "$v" = "${SSL_CERT_FILE:-}" ] || { echo "SSL_CERT_FILE=${SSL_CERT_FILE:-} but another names $v"; exit 1; }
  done
  grep -qxF "$(sed -n 2p "$ca")" "$SSL_CERT_FILE" || { echo "SSL_CERT_FILE=$SSL_CERT_FILE lacks the CA"; exit 1; }
  n=$(grep -c 'BEGIN CERTIFICATE' "$SSL_CERT_FILE")
  [ "$n" -gt 100 ] || { echo "SSL_CERT_FILE holds $n certificates: not the system's"; exit 1; }
  [ "$NODE_EXTRA_CA_CERTS" = "$ca" ] || { echo "NODE_EXTRA_CA_CERTS=$NODE_EXTRA_CA_CERTS"; exit 1; }
  echo "entrypoint ok: SSL_CERT_FILE=$SSL_CERT_FILE holds the CA and the system's ($n certificates), NODE_EXTRA_CA_CERTS=$ca"
else
  env | grep -E '^(SSL_CERT_FILE|GIT_SSL_CAINFO|CURL_CA_BUNDLE|REQUESTS_CA_BUNDLE|NODE_EXTRA_CA_CERTS)=' && exit 1
  echo "entrypoint ok: no CA mounted, no CA variable set"
fi
SH
chmod 755 "$tmp/sky" && chmod 644 "$tmp/ca.crt"
check "entrypoint with Cloudflare's CA" "entrypoint ok" \
  -v "$tmp/ca.crt:$ca_path:ro" -v "$tmp/sky:/usr/local/bin/sky:ro" "$image"
check "entrypoint without it" "entrypoint ok" -v "$tmp/sky:/usr/local/bin/sky:ro" "$image"

size=$(docker image inspect "$image" --format '{{.Size}}' | awk '{printf "%d MB", $1/1e6}')
echo "sandbox image: $passed passed, $failed failed, $skipped not run ($size)"
[ "$failed" = 0 ]
