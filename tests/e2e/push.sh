#!/usr/bin/env bash
# End-to-end for issue 17's pushing and credentials kept by the runner, against the e2e server (it needs
# SECRETS_KEY: run it through tests/e2e/run.sh) and one `sky runner` whose agent runs each message as a
# shell line:
#   1. A task with a git remote (set_task_remote: a bare repository on the runner's machine, under the
#      runner's --push-root, pushed with a github connector's grant): the agent writes a file and lands;
#      land runs the checks and has the runner push; it reports pushed:true with the remote's new head, which the bare repository has, with
#      the file and the landing's summary as the commit message. A second landing builds on it.
#   2. Someone else pushes to the branch: the next land lands but does not push (non-fast-forward, in
#      steps and reason), and the branch keeps the other commit.
#   3. A shim deploy: `vercel deploy --prod` runs through the runner with the grant's credential; the agent's
#      environment holds no channel secret and neither it, the turn's files nor the transcript hold the
#      credential, while the command succeeds and its exit is the proof remember_command deploy accepts.
# SKY=path skips the build and uses that binary.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
cd "$ROOT"

work=$(mktemp -d "${TMPDIR:-/tmp}/sky-push-e2e.XXXXXX")
runner_pid=
cleanup() {
  [ -n "$runner_pid" ] && kill -TERM "$runner_pid" 2>/dev/null || true
  rm -rf "$work"
  if declare -F stop_server >/dev/null; then stop_server; fi
}
trap cleanup EXIT

source "$ROOT/tests/e2e/lib.sh"
e2e_server push

sky_binary push

read_turn() { # SESSION CURSOR MESSAGE_ID DEADLINE_S -> the turn's events once it has finished
  local sid=$1 cursor=$2 mid=$3 deadline=$(( $(now) + $4 )) events='[]' page
  while :; do
    [ "$(now)" -lt "$deadline" ] || fail "turn $mid did not finish within $4 s: $events (runner log: $(tail -30 "$work/runner.log"))"
    page=$(mcp read_session "{\"session_id\":\"$sid\",\"cursor\":\"$cursor\",\"message_id\":\"$mid\",\"wait_seconds\":10}")
    events=$(python3 -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1]) + json.loads(sys.argv[2])["events"]))' "$events" "$page")
    cursor=$(field "$page" 'v["cursor"]')
    [ "$(field "$page" 'v["turn_finished"]')" = true ] && break
  done
  echo "$events"
}
say_turn() { # STARTED_OR_SENT_JSON SESSION -> what the turn printed
  texts "$(read_turn "$2" "$(field "$1" 'v["cursor"]')" "$(field "$1" 'v["message_id"]')" 240)"
}
landing() { # WHAT_THE_TURN_SAID -> the last land answer (JSON), or fail
  local l
  l=$(grep -o 'land: {.*' <<<"$1" | tail -1 | sed 's/^[^{]*//') || true
  [ -n "$l" ] || fail "no land answer in: $1"
  echo "$l"
}
rest() { # METHOD PATH BODY -> the answer (fails on an error status)
  curl -fsS -X "$1" "$URL$2" -H "Authorization: Bearer $KEY" -H 'content-type: application/json' ${3:+-d "$3"} \
    || fail "$1 $2"
}

email="push-e2e-$(date +%s)-$$@example.com"
acct=$(curl -fsS -X POST "$URL/v1/accounts" -H 'content-type: application/json' \
  -d "{\"name\":\"Push E2E\",\"email\":\"$email\"}") || fail "POST /v1/accounts"
KEY=$(field "$acct" 'v["key"]["key"]')
GIT_SECRET="ghp_e2e$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
VERCEL_SECRET="vt-e2e-$(python3 -c 'import secrets; print(secrets.token_hex(12))')"
repo=$(field "$(rest POST /v1/connectors "{\"name\":\"repo\",\"provider\":\"github\",\"env\":\"scm\",\"credentials\":{\"env\":{\"GH_TOKEN\":\"$GIT_SECRET\"}}}")" 'v["connector_id"]')
web=$(field "$(rest POST /v1/connectors "{\"name\":\"web\",\"provider\":\"vercel\",\"env\":\"prod\",\"credentials\":{\"env\":{\"VERCEL_TOKEN\":\"$VERCEL_SECRET\"}}}")" 'v["connector_id"]')
rest PUT /v1/policies "{\"connector_id\":\"$repo\",\"scope\":\"write\",\"decision\":\"allow\"}" >/dev/null
rest PUT /v1/policies "{\"connector_id\":\"$web\",\"scope\":\"deploy\",\"decision\":\"allow\"}" >/dev/null
shell=$(field "$(rest POST /v1/agents '{"name":"Shell","harness":"runner","model":"sh","instructions":"Run the message."}')" 'v["agent_id"]')

# A stand-in vercel on the runner's PATH: it says how long a token it got, never the token.
mkdir -p "$work/bin" "$work/tmp" "$work/home" "$work/repos"
cat >"$work/bin/vercel" <<'SH'
#!/bin/sh
echo "vercel ran: $*; VERCEL_TOKEN has ${#VERCEL_TOKEN} chars"
SH
chmod +x "$work/bin/vercel"
# A session tool through the turn's MCP config (`sky mcp`): prints the tool's text result.
cat >"$work/tool.py" <<'PY'
import json, os, subprocess, sys
server = json.load(open(os.environ["AGENTSKY_MCP_CONFIG"]))["mcpServers"]["agentsky"]
call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": sys.argv[1], "arguments": json.loads(sys.argv[2])}}
out = subprocess.run([server["command"], *server["args"]], input=json.dumps(call) + "\n", capture_output=True, text=True, timeout=600)
print(sys.argv[1] + ": " + json.loads(out.stdout)["result"]["content"][0]["text"])
PY
env -u AGENTSKY_API_KEY HOME="$work/home" TMPDIR="$work/tmp" PATH="$work/bin:$PATH" \
  "$SKY" runner --server "$URL" --key "$KEY" --name "e2e push" --push-root "$work/repos" -- sh -c 'eval "$AGENTSKY_MESSAGE"' >"$work/runner.log" 2>&1 &
runner_pid=$!

# ── 1. land pushes to a bare repository on the runner's machine ──
log "push: land pushes the landed work to the task's git remote through the runner"
git init -q --bare --initial-branch=main "$work/repos/remote.git"
TOOL="python3 $work/tool.py"
started=$(mcp start_session "{\"agent_id\":\"$shell\",\"message\":\"true\",\"idempotency_key\":\"push-e2e-0-$$\"}")
sid=$(field "$started" 'v["session"]["session_id"]')
task=$(field "$started" 'v["session"]["task_id"]')
say_turn "$started" "$sid" >/dev/null
rest PUT "/v1/tasks/$task/settings" '{"lanes":true}' >/dev/null
bad=$(curl -sS -X PUT "$URL/v1/tasks/$task/remote" -H "Authorization: Bearer $KEY" -H 'content-type: application/json' \
  -d "{\"url\":\"https://x:$GIT_SECRET@github.com/a/b.git\",\"connector_id\":\"$repo\"}")
grep -qF '`url` must not hold a user name or password' <<<"$bad" || fail "a URL with credentials was taken: $bad"
set=$(mcp set_task_remote "{\"task_id\":\"$task\",\"url\":\"file://$work/repos/remote.git\",\"connector_id\":\"$repo\"}")
[ "$(field "$set" 'v["remote"]["branch"]')" = main ] || fail "set_task_remote: $set"
ok "set_task_remote: a credentialed URL refused; file://…/remote.git (branch main, connector repo) set"

msg="printf 'hello from the lane\n' > app.txt; $TOOL land '{\"summary\":\"Try\"}'; \
$TOOL remember_command '{\"kind\":\"checks\",\"command\":\"test -f app.txt\"}'; \
$TOOL request_access '{\"target\":\"repo\",\"scope\":[\"write\"],\"reason\":\"push the landing\"}'; \
$TOOL land '{\"summary\":\"Add app.txt\n\nThe first file.\"}'"
sent=$(mcp send_message "{\"session_id\":\"$sid\",\"message\":$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$msg"),\"idempotency_key\":\"push-e2e-1-$$\"}")
said=$(say_turn "$sent" "$sid")
landed=$(landing "$said")
[ "$(field "$landed" 'v["pushed"]')" = true ] || fail "not pushed: $landed"
head=$(field "$landed" 'v["remoteHead"]')
[ "$(git --git-dir "$work/repos/remote.git" rev-parse main)" = "$head" ] || fail "the bare repository's main is not $head"
[ "$(git --git-dir "$work/repos/remote.git" show main:app.txt)" = "hello from the lane" ] || fail "app.txt on the remote"
git --git-dir "$work/repos/remote.git" log -1 --format=%B main | grep -qF "The first file." || fail "the commit message"
grep -qF "checks: \`test -f app.txt\` passed" <<<"$landed" || fail "the checks did not run: $landed"
grep -qF "push: main on file://$work/repos/remote.git is now at $head" <<<"$landed" || fail "steps: $landed"
ok "land: checks passed, pushed:true, the bare repository's main is $head with app.txt and the summary"

msg="printf 'second\n' > two.txt; $TOOL land '{\"summary\":\"Add two.txt\"}'"
sent=$(mcp send_message "{\"session_id\":\"$sid\",\"message\":$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$msg"),\"idempotency_key\":\"push-e2e-2-$$\"}")
landed=$(landing "$(say_turn "$sent" "$sid")")
[ "$(field "$landed" 'v["pushed"]')" = true ] || fail "the second push: $landed"
second=$(field "$landed" 'v["remoteHead"]')
[ "$(git --git-dir "$work/repos/remote.git" rev-parse "$second^")" = "$head" ] || fail "the second push does not build on the first"
ok "a second landing's push builds on the first ($head → $second)"

# ── 2. Someone else moves the branch: not overwritten ──
log "push: a branch moved by someone else is not overwritten"
git clone -q -b main "$work/repos/remote.git" "$work/other"
( cd "$work/other" && echo theirs > theirs.txt && git add theirs.txt \
  && git -c user.name=Other -c user.email=o@example.com commit -qm theirs && git push -q origin HEAD:main )
theirs=$(git --git-dir "$work/repos/remote.git" rev-parse main)
# Another session of the task (the first has used its access requests for this minute).
msg="printf 'third\n' > three.txt; $TOOL request_access '{\"target\":\"repo\",\"scope\":[\"write\"],\"reason\":\"push\"}'; \
$TOOL land '{\"summary\":\"Add three.txt\"}'"
sent=$(mcp start_session "{\"agent_id\":\"$shell\",\"task_id\":\"$task\",\"message\":$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$msg"),\"idempotency_key\":\"push-e2e-3-$$\"}")
landed=$(landing "$(say_turn "$sent" "$(field "$sent" 'v["session"]["session_id"]')")")
[ "$(field "$landed" 'v["landed"]')" = true ] && [ "$(field "$landed" 'v["pushed"]')" = false ] || fail "$landed"
grep -qF "non-fast-forward" <<<"$(field "$landed" 'v["reason"]')" || fail "the reason: $landed"
grep -qF "push: not pushed" <<<"$(field "$landed" 'v["steps"]')" || fail "the steps: $landed"
[ "$(git --git-dir "$work/repos/remote.git" rev-parse main)" = "$theirs" ] || fail "the other commit was overwritten"
ok "landed but not pushed (non-fast-forward, in steps and reason); main keeps the other commit"

# ── 3. A shim deploy: the credential stays with the runner ──
log "push: a shim deploy whose credential never reaches the agent"
started=$(mcp start_session "{\"agent_id\":\"$shell\",\"message\":\"true\",\"idempotency_key\":\"push-e2e-4-$$\"}")
dsid=$(field "$started" 'v["session"]["session_id"]')
say_turn "$started" "$dsid" >/dev/null
rest POST "/v1/sessions/$dsid/ask" '{"kind":"deploy"}' >/dev/null
mkdir -p "$work/seen"
msg="vercel deploy --prod; echo \"exit=\$?\"; env > '$work/seen/env.txt'; cat /proc/\$\$/environ > '$work/seen/environ' 2>/dev/null; \
cp -r . '$work/seen/work'; cp -r \"\$(dirname \"\$AGENTSKY_GRANTS_FILE\")\" '$work/seen/meta'; \
echo \"secret vars: \$(env | grep -c '^AGENTSKY_RUNNER_SEC[R]ET=')\"; \
$TOOL remember_command '{\"kind\":\"deploy\",\"command\":\"vercel deploy --prod\",\"targetId\":\"$web\"}'"
sent=$(mcp send_message "{\"session_id\":\"$dsid\",\"message\":$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$msg"),\"idempotency_key\":\"push-e2e-5-$$\"}")
said=$(say_turn "$sent" "$dsid")
grep -qF "vercel ran: deploy --prod; VERCEL_TOKEN has ${#VERCEL_SECRET} chars" <<<"$said" || fail "the deploy: $said"
grep -qF "exit=0" <<<"$said" || fail "$said"
grep -qF "secret vars: 0" <<<"$said" || fail "the agent's environment holds the channel's secret: $said"
grep -F "remember_command:" <<<"$said" | grep -qF '"ok":true' || fail "the runner's exit was not the proof: $said"
if grep -rqF "$VERCEL_SECRET" "$work/seen"; then fail "the credential is in the agent's environment or files"; fi
for s in "$sid" "$dsid"; do
  all=$(mcp read_session "{\"session_id\":\"$s\",\"limit\":200}")
  for secret in "$VERCEL_SECRET" "$GIT_SECRET"; do
    if grep -qF "$secret" <<<"$all"; then fail "a credential is in the transcript of $s"; fi
  done
done
for secret in "$VERCEL_SECRET" "$GIT_SECRET"; do
  if grep -qF "$secret" "$work/runner.log"; then fail "a credential is in the runner's log"; fi
done
stored=$(rest GET /v1/connectors)
[ "$(field "$stored" '[c["deploy_command"] for c in v["connectors"] if c["name"] == "web"][0]')" = "vercel deploy --prod" ] \
  || fail "the remembered deploy command: $stored"
ok "vercel deploy ran through the runner (exit 0, the proof); no secret in the agent's env, files, transcript or log"
log "push: $passed checks passed"
