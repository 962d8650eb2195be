#!/usr/bin/env bash
# End-to-end for the `sky` command line (issue 8), as a person would use it:
#   1. `sky auth login` against wrangler dev: the code it prints is approved on the server's /device page
#      (creating the account there), and the CLI receives its own key, stored 0600, never printed.
#   2. `npx` of the packed tarballs (npm/sky/build.sh) in a scratch HOME that already has Claude Code's
#      ~/.claude.json and Codex's ~/.codex/config.toml: `--dry-run` writes nothing; a real run adds the
#      entries and the skill, keeps everything else, and the entries work: the MCP server answers
#      tools/list with exactly the URL and credentials each client would send. A second run changes
#      nothing.
#   3. `sky auth logout` revokes the device's key.
# Uses the server of tests/e2e/run.sh when AGENTSKY_URL is set, else starts its own.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
cd "$ROOT"

work=$(mktemp -d "${TMPDIR:-/tmp}/sky-e2e.XXXXXX")
cleanup() {
  [ -n "${login_pid:-}" ] && kill "$login_pid" 2>/dev/null || true
  rm -rf "$work"
  if declare -F stop_server >/dev/null; then stop_server; fi
}
trap cleanup EXIT

source "$ROOT/tests/e2e/lib.sh"
e2e_server cli

log "cli: building and packing the sky npm packages (npm/sky/build.sh)"
bash npm/sky/build.sh
SKY="$ROOT/target/release/sky"
[ -x "$SKY" ] || fail "no $SKY after npm/sky/build.sh"

# ── 1. Device sign-in ──
log "cli: sky auth login against $URL, approved on the /device page"
login_home="$work/login-home"
mkdir -p "$login_home"
HOME="$login_home" "$SKY" auth login --server "$URL" --name "sky e2e" --no-browser >"$work/login.out" 2>&1 &
login_pid=$!
code=
for _ in $(seq 1 100); do
  code=$(grep -o 'code=[A-Z]\{4\}-[A-Z]\{4\}' "$work/login.out" | head -1 | cut -d= -f2 || true)
  [ -n "$code" ] && break
  kill -0 "$login_pid" 2>/dev/null || { cat "$work/login.out" >&2; fail "sky auth login exited before showing a code"; }
  sleep 0.1
done
[ -n "$code" ] || { cat "$work/login.out" >&2; fail "sky auth login showed no code within 10 s"; }
grep -q "Open $URL/device?code=$code" "$work/login.out" || fail "the link does not point at $URL/device"
grep -q "Waiting for approval\|Signing in" "$work/login.out" || fail "no progress output while waiting"
ok "sky auth login shows the code $code and the link"

page=$(curl -fsS "$URL/device?code=$code")
grep -q "sky e2e" <<<"$page" || fail "the /device page does not name the device"
email="cli-e2e-$(date +%s)-$$@example.com"
approved=$(curl -sS -w '\n%{http_code}' -X POST "$URL/device" -H "Origin: $URL" \
  --data-urlencode "user_code=$code" --data-urlencode action=create \
  --data-urlencode "name=CLI E2E" --data-urlencode "email=$email")
[ "$(tail -1 <<<"$approved")" = 200 ] || fail "approving on /device: $approved"
grep -q "Approved" <<<"$approved" || fail "the page did not say Approved: $approved"
ok "approved on the /device page, creating the account $email"

for _ in $(seq 1 300); do kill -0 "$login_pid" 2>/dev/null || break; sleep 0.1; done
wait "$login_pid" || { cat "$work/login.out" >&2; fail "sky auth login failed after approval"; }
login_pid=
cfg="$login_home/.config/agentsky/config.json"
[ -f "$cfg" ] || fail "no $cfg"
[ "$(stat -c %a "$cfg")" = 600 ] || fail "$cfg is $(stat -c %a "$cfg"), not 600"
KEY=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["key"])' "$cfg")
[[ $KEY == ast_* ]] || fail "the stored key is not an ast_ key"
if grep -qF "$KEY" "$work/login.out"; then fail "sky auth login printed the key in full"; fi
grep -qF "${KEY:0:12}" "$work/login.out" || fail "sky auth login did not show the key's prefix"
grep -q "$email" "$work/login.out" || fail "sky auth login did not say who signed in"
ok "the device key is stored 0600 and shown only as ${KEY:0:12}…"

HOME="$login_home" "$SKY" auth status >"$work/status.out" 2>&1 || { cat "$work/status.out" >&2; fail "sky auth status"; }
grep -q "Signed in" "$work/status.out" || fail "sky auth status: $(cat "$work/status.out")"
keys=$(curl -fsS "$URL/v1/keys" -H "Authorization: Bearer $KEY")
grep -q '"name":"sky e2e"' <<<"$keys" || fail "the new key is not named for the device: $keys"
ok "sky auth status accepts it; the key is named for the device"

# An agent of the workspace's own, so the skill's catalog has something of its own to show.
agent=$(curl -fsS -X POST "$URL/v1/agents" -H "Authorization: Bearer $KEY" -H 'content-type: application/json' \
  -d "{\"name\":\"Release scribe\",\"handle\":\"scribe-$$-$(date +%s)\",\"harness\":\"echo\",\"model\":\"echo\",\"description\":\"Writes release notes\"}")
handle=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["handle"])' "$agent")

# ── 2. npx of the packed tarballs in a scratch HOME ──
home="$work/home"
mkdir -p "$home/.codex" "$work/pkgs"
cat >"$home/.claude.json" <<'JSON'
{
  "numStartups": 3,
  "mcpServers": {
    "github": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"]
    }
  },
  "projects": {
    "/home/e2e/app": {
      "allowedTools": [],
      "mcpServers": {}
    }
  }
}
JSON
cat >"$home/.codex/config.toml" <<'TOML'
# my Codex settings
model = "gpt-5-codex"

[mcp_servers.files]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]
TOML
platform=$(node -p 'process.platform + "-" + process.arch')
cp npm/sky/dist/bundled/agentsky-sky-*.tgz "$work/pkgs/"
mkdir -p "$work/pkgs/pair"
cp npm/sky/dist/agentsky-sky-*.tgz npm/sky/dist/platforms/agentsky-sky-"$platform"-*.tgz "$work/pkgs/pair/"
# npx resolves ./paths against the nearest folder with a package.json or node_modules, which could be
# any parent of the scratch folder: give each folder its own.
echo '{"private": true}' >"$work/pkgs/package.json"
echo '{"private": true}' >"$work/pkgs/pair/package.json"
snapshot() { (cd "$home" && find . -type f -print0 | sort -z | xargs -0 sha256sum); }
# --offline: installing the tarballs needs no registry (the other platforms' optional packages are
# skipped); the npm cache is private to this run.
npx_env=(env -u AGENTSKY_API_KEY -u AGENTSKY_URL HOME="$home" npm_config_cache="$work/npm-cache" npm_config_offline=true)

log "cli: npx --yes ./agentsky-sky-*.tgz setup --dry-run (the self-contained tarball)"
before=$(snapshot)
(cd "$work/pkgs" && "${npx_env[@]}" npx --yes ./agentsky-sky-*.tgz setup --dry-run --key "$KEY" --server "$URL") \
  >"$work/dry.out" 2>&1 || { cat "$work/dry.out" >&2; fail "npx … setup --dry-run"; }
[ "$before" = "$(snapshot)" ] || fail "--dry-run changed files"
[ ! -e "$home/.claude/skills" ] || fail "--dry-run created the Claude Code skill"
grep -q "~/.claude.json: would add mcpServers.agentsky" "$work/dry.out" || { cat "$work/dry.out" >&2; fail "dry run: no Claude Code change shown"; }
grep -q "~/.codex/config.toml: would add \[mcp_servers.agentsky\]" "$work/dry.out" || fail "dry run: no Codex change shown"
grep -q "would create the Codex skill's catalog.md" "$work/dry.out" || fail "dry run: no skill shown"
if grep -qF "$KEY" "$work/dry.out"; then fail "--dry-run printed the key in full"; fi
ok "--dry-run lists every change and writes nothing"

log "cli: npx --package <platform> --package <launcher> -- sky setup (the published pair)"
pair=(--package "./$(cd "$work/pkgs/pair" && ls agentsky-sky-"$platform"-*.tgz)" --package "./$(cd "$work/pkgs/pair" && ls agentsky-sky-[0-9]*.tgz)")
(cd "$work/pkgs/pair" && "${npx_env[@]}" npx --yes "${pair[@]}" -- sky setup --key "$KEY" --server "$URL") \
  >"$work/setup.out" 2>&1 || { cat "$work/setup.out" >&2; fail "npx … sky setup"; }
if grep -qF "$KEY" "$work/setup.out"; then fail "setup printed the key in full"; fi
grep -q "\. ~/.config/agentsky/env" "$work/setup.out" || fail "setup did not say how to export AGENTSKY_API_KEY"
ok "setup ran from the packed tarballs"

python3 - "$home" "$URL" "$KEY" "$handle" <<'PY' || fail "the written entries are wrong (above)"
import json, os, sys, tomllib
home, url, key, handle = sys.argv[1:]
c = json.load(open(f"{home}/.claude.json"))
assert c["mcpServers"]["agentsky"] == {"type": "http", "url": f"{url}/v1/mcp",
    "headers": {"Authorization": f"Bearer {key}"}}, c["mcpServers"]["agentsky"]
assert c["mcpServers"]["github"]["command"] == "npx" and c["numStartups"] == 3, c
assert c["projects"]["/home/e2e/app"]["mcpServers"] == {}, c
text = open(f"{home}/.codex/config.toml").read()
assert text.startswith("# my Codex settings\nmodel = \"gpt-5-codex\"\n"), text
t = tomllib.loads(text)
assert t["mcp_servers"]["agentsky"] == {"url": f"{url}/v1/mcp", "bearer_token_env_var": "AGENTSKY_API_KEY"}, t
assert t["mcp_servers"]["files"]["command"] == "npx", t
for d in (".claude/skills/agentsky", ".codex/skills/agentsky"):
    skill = open(f"{home}/{d}/SKILL.md").read()
    assert skill.startswith("---\nname: agentsky\ndescription: "), skill[:80]
    catalog = open(f"{home}/{d}/catalog.md").read()
    assert f"`@{handle}`" in catalog and "Your workspace's agents" in catalog, catalog
env = open(f"{home}/.config/agentsky/env").read()
assert f"export AGENTSKY_API_KEY='{key}'" in env, "env file"
assert oct(os.stat(f"{home}/.config/agentsky/env").st_mode & 0o777) == "0o600"
PY
ok "Claude Code and Codex entries, the skill with the live catalog (@$handle), the 0600 env file"

# The entries work: call the server exactly as each client would, from its own config.
mcp_tools() { # URL AUTH_HEADER -> tool names
  curl -fsS -X POST "$1" -H "$2" -H 'content-type: application/json' \
    -H 'accept: application/json, text/event-stream' -H 'mcp-protocol-version: 2025-06-18' \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' |
    python3 -c 'import json,sys; print(" ".join(t["name"] for t in json.load(sys.stdin)["result"]["tools"]))'
}
read -r c_url c_auth < <(python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["mcpServers"]["agentsky"]; print(e["url"], e["headers"]["Authorization"])' "$home/.claude.json")
tools=$(mcp_tools "$c_url" "Authorization: $c_auth") || fail "Claude Code's entry: tools/list failed"
grep -qw start_session <<<"$tools" && grep -qw search_catalog <<<"$tools" || fail "Claude Code's entry: tools are $tools"
ok "Claude Code's entry answers tools/list"
read -r x_url x_env < <(python3 -c 'import tomllib,sys; e=tomllib.load(open(sys.argv[1],"rb"))["mcp_servers"]["agentsky"]; print(e["url"], e["bearer_token_env_var"])' "$home/.codex/config.toml")
codex_key=$(env -u AGENTSKY_API_KEY bash -c '. "$1" && printenv "$2"' _ "$home/.config/agentsky/env" "$x_env")
tools=$(mcp_tools "$x_url" "Authorization: Bearer $codex_key") || fail "Codex's entry: tools/list failed"
grep -qw start_session <<<"$tools" || fail "Codex's entry: tools are $tools"
ok "Codex's entry answers tools/list with the key from the env file it is told to source"

# The real clients (both are dev dependencies in package.json, so node_modules/.bin has them): Codex must
# read its entry, and Claude Code must connect with its own. Without them on PATH the checks say so.
if command -v codex >/dev/null; then
  got=$(env -u AGENTSKY_API_KEY HOME="$home" codex mcp get agentsky --json 2>/dev/null) || fail "codex mcp get agentsky"
  python3 -c 'import json,sys; t=json.loads(sys.argv[1])["transport"]; assert t["url"] == sys.argv[2] + "/v1/mcp" and t["bearer_token_env_var"] == "AGENTSKY_API_KEY", t' \
    "$got" "$URL" || fail "codex mcp get agentsky: $got"
  ok "$(codex --version 2>/dev/null | head -1) reads the entry"
else
  log "cli: no codex on PATH; skipping the check with the real Codex"
fi
if command -v claude >/dev/null; then
  got=$(HOME="$home" CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 timeout 60 claude mcp get agentsky 2>&1 || true)
  grep -q "Connected" <<<"$got" || fail "claude mcp get agentsky did not connect: ${got//$KEY/${KEY:0:12}…}"
  ok "Claude Code $(claude --version 2>/dev/null | head -1) connects with the entry"
else
  log "cli: no claude on PATH; skipping the check with the real Claude Code"
fi

before=$(snapshot)
(cd "$work/pkgs/pair" && "${npx_env[@]}" npx --yes "${pair[@]}" -- sky setup --key "$KEY" --server "$URL") \
  >"$work/again.out" 2>&1 || { cat "$work/again.out" >&2; fail "second setup"; }
[ "$before" = "$(snapshot)" ] || fail "a second setup changed files"
ok "running setup again changes nothing"

# ── 3. Sign out ──
HOME="$login_home" "$SKY" auth logout >"$work/logout.out" 2>&1 || { cat "$work/logout.out" >&2; fail "sky auth logout"; }
status=$(curl -s -o /dev/null -w '%{http_code}' "$URL/v1/workspaces" -H "Authorization: Bearer $KEY")
[ "$status" = 401 ] || fail "the device key still works after logout ($status)"
if HOME="$login_home" "$SKY" auth status >/dev/null 2>&1; then fail "sky auth status still says signed in"; fi
ok "sky auth logout revoked the device key"

log "cli: all checks passed"
echo "cli: $passed passed, 0 failed"
