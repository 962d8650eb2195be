#!/usr/bin/env bash
# `make deploy-check` refuses what would break a production deploy and passes the repository's own
# configuration: each broken copy of wrangler.toml below must fail, naming the problem; the real one
# (its two fill-in placeholders allowed) must pass the lint and the offline `wrangler deploy --dry-run`.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
cd "$ROOT"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The unfilled template fails on exactly its placeholders.
if out=$(python3 scripts/deploy_lint.py 2>&1); then die "the unfilled template passed: $out"; fi
grep -q "PUBLIC_BASE_URL is empty" <<<"$out" || die "the empty PUBLIC_BASE_URL was not named: $out"
grep -q "database_id is not a D1 id" <<<"$out" || die "the placeholder database_id was not named: $out"

# Each mutation (python, on the file's text) and the words the lint must answer with.
python3 - "$tmp" <<'PY'
import re, sys
src = open("wrangler.toml").read()
filled = src.replace('database_id = "REPLACE_WITH_YOUR_D1_DATABASE_ID"', 'database_id = "0b2c9c3e-5a4f-4f8e-9d71-2b1c3a4d5e6f"')
filled = re.sub(r'(\[env\.production\.vars\][^\[]*?PUBLIC_BASE_URL = )""', r'\1"https://agentsky.acme.dev"', filled, flags=re.S)
cases = {
    "filled": (filled, None),
    "no-observability": (filled.replace("[env.production.observability]\nenabled = true", "[env.production.observability]\nenabled = false"), "observability"),
    "loopback": (re.sub(r'(\[env\.production\.vars\][^\[]*?ALLOW_LOOPBACK_HTTP = )"0"', r'\1"1"', filled, flags=re.S), "ALLOW_LOOPBACK_HTTP"),
    "no-dlq": (filled.replace('dead_letter_queue = "agentsky-fires-dlq"\n\n[[env.production.queues.consumers]]\nqueue = "agentsky-fires-dlq"', '\n[[env.production.queues.consumers]]\nqueue = "agentsky-fires-dlq"'), "dead_letter_queue"),
    "no-cron": (filled.replace('[env.production.triggers]\ncrons = ["* * * * *"]', '[env.production.triggers]\ncrons = []'), "crons"),
    "no-feeds": (filled.replace('[[env.production.durable_objects.bindings]]\nname = "FEEDS"\nclass_name = "Feed"\n', ''), '"FEEDS"'),
    "http-base": (filled.replace('"https://agentsky.acme.dev"', '"http://agentsky.acme.dev"'), "https origin"),
    "future-date": (re.sub(r'compatibility_date = "[0-9-]+"', 'compatibility_date = "2999-01-01"', filled), "future"),
    "secret-in-vars": (filled.replace('[env.production.vars]\n', '[env.production.vars]\nSECRETS_KEY = "x"\n'), "is a secret"),
}
for name, (text, _) in cases.items():
    assert text != src or name == "filled", name
    if name != "filled":
        assert text != filled, f"mutation {name} changed nothing"
    open(f"{sys.argv[1]}/{name}.toml", "w").write(text)
    open(f"{sys.argv[1]}/{name}.want", "w").write(cases[name][1] or "")
PY
python3 scripts/deploy_lint.py "$tmp/filled.toml" 2>/dev/null || die "a filled-in configuration was refused: $(python3 scripts/deploy_lint.py "$tmp/filled.toml" 2>&1)"
for f in "$tmp"/*.toml; do
  name=$(basename "$f" .toml); [ "$name" = filled ] && continue
  want=$(cat "$tmp/$name.want")
  if out=$(python3 scripts/deploy_lint.py "$f" 2>&1); then die "deploy-check passed a broken configuration ($name)"; fi
  grep -qF -- "$want" <<<"$out" || die "deploy-check did not name the problem of $name ($want): $out"
  echo "deploy-check: $name refused" >&2
done

# The whole command, with the template's placeholders allowed: lint and the offline dry run.
DEPLOY_CHECK_PLACEHOLDERS=ok bash scripts/deploy-check.sh >"$tmp/out.log" 2>&1 || { cat "$tmp/out.log" >&2; die "make deploy-check failed"; }
grep -q "Total Upload" "$tmp/out.log" || die "the dry run printed no bundle size"
grep -q "env.SESSIONS (Session)" "$tmp/out.log" || die "the dry run did not list the bindings"
echo "deploy-check: every broken configuration refused; the template passes with its placeholders" >&2
