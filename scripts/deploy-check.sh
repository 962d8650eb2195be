#!/usr/bin/env bash
# `make deploy-check`: lints wrangler.toml's production environment (scripts/deploy_lint.py), then builds
# and bundles exactly what `wrangler deploy --env production` would upload, offline (`--dry-run`), and
# prints the bindings and the bundle size. Nothing is sent to Cloudflare.
# DEPLOY_CHECK_PLACEHOLDERS=ok accepts the unfilled template's database_id and PUBLIC_BASE_URL (CI).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"

log "deploy-check: linting wrangler.toml [env.production]"
python3 scripts/deploy_lint.py "${1:-wrangler.toml}"

log "deploy-check: wrangler deploy --dry-run --env production (offline)"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
npx wrangler deploy --dry-run --env production --outdir "$out" ${1:+--config "$1"}
[ -s "$out/shim.mjs" ] || [ -n "$(ls "$out")" ] || die "the dry run wrote no bundle to $out"
log "deploy-check: ok"
