#!/usr/bin/env bash
# End-to-end for deletes in task folders (issue 17): a delete is a tombstone in the session's lane until
# `land` carries it into the base.
#   1. An `echo` session deletes a file with its harness's `delete_task_file` tool (`/delete <path>`): the
#      base keeps the file until the session lands; the checks (run by a runner of the workspace in a fresh
#      checkout of the lane) see the folder without it; after landing the base no longer lists it.
#   2. A `runner` session's agent removes a file in its turn folder: the runner deletes it from the lane at
#      the turn's end (its status names it), the next turn's folder (the lane) no longer has it while the
#      base still does, and `land` carries the delete into the base.
# Uses the server of tests/e2e/run.sh when AGENTSKY_URL is set, else starts its own. SKY=path skips the
# build and uses that binary.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
cd "$ROOT"

work=$(mktemp -d "${TMPDIR:-/tmp}/sky-deletes-e2e.XXXXXX")
runner_pid=
cleanup() {
  [ -n "$runner_pid" ] && kill -KILL "$runner_pid" 2>/dev/null || true
  rm -rf "$work"
  if declare -F stop_server >/dev/null; then stop_server; fi
}
trap cleanup EXIT

source "$ROOT/tests/e2e/lib.sh"
e2e_server deletes
sky_binary deletes

email="deletes-e2e-$(date +%s)-$$@example.com"
acct=$(curl -fsS -X POST "$URL/v1/accounts" -H 'content-type: application/json' \
  -d "{\"name\":\"Deletes E2E\",\"email\":\"$email\"}") || fail "POST /v1/accounts"
KEY=$(field "$acct" 'v["key"]["key"]')
agent() { # NAME HARNESS -> agent id
  local r
  r=$(curl -fsS -X POST "$URL/v1/agents" -H "Authorization: Bearer $KEY" -H 'content-type: application/json' \
    -d "{\"name\":\"$1\",\"harness\":\"$2\",\"model\":\"m\",\"instructions\":\"Run the message.\"}") || fail "POST /v1/agents $1"
  field "$r" 'v["agent_id"]'
}
ECHO=$(agent "Deleter" echo)
SHELL_AGENT=$(agent "Shell" runner)

# A turn's events once it has finished.
finished() { # SESSION CURSOR MESSAGE_ID -> the turn's texts
  local sid=$1 cursor=$2 mid=$3 deadline=$(( $(now) + 90 )) all='' page
  while :; do
    [ "$(now)" -lt "$deadline" ] || fail "turn $mid did not finish: $all"
    page=$(mcp read_session "{\"session_id\":\"$sid\",\"cursor\":\"$cursor\",\"message_id\":\"$mid\",\"wait_seconds\":10}")
    all+=$'\n'$(field "$page" '"\n".join("%s: %s %s" % (e["type"], e.get("text") or e.get("message") or e.get("name") or "", e.get("content") or "") for e in v["events"])')
    cursor=$(field "$page" 'v["cursor"]')
    [ "$(field "$page" 'v["turn_finished"]')" = true ] && break
  done
  echo "$all"
}
say() { # SESSION MESSAGE KEY -> the turn's texts
  local sent
  sent=$(mcp send_message "{\"session_id\":\"$1\",\"message\":$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$2"),\"idempotency_key\":\"$3-$$\"}")
  finished "$1" "$(field "$sent" 'v["cursor"]')" "$(field "$sent" 'v["message_id"]')"
}
base_paths() { field "$(mcp list_task_files "{\"task_id\":\"$1\"}")" '" ".join(f["path"] for f in v["files"])'; }
checks() { # TASK COMMAND: the project's checks
  local project
  project=$(python3 -c 'import json,sys; print(json.dumps(json.dumps({"checks": {"command": sys.argv[1]}})))' "$2")
  mcp write_task_file "{\"task_id\":\"$1\",\"path\":\".agentsky/project.json\",\"content\":$project}" >/dev/null
}
land_as() { # SESSION SUMMARY -> land's answer, called with the session's own token on the session server
  local token reply
  token=$(curl -fsS -X POST "$URL/v1/sessions/$1/token" -H "Authorization: Bearer $KEY") || fail "POST /v1/sessions/$1/token"
  token=$(field "$token" 'v["token"]')
  reply=$(curl -sS --max-time 150 -X POST "$URL/v1/session/mcp" -H "Authorization: Bearer $token" -H 'content-type: application/json' \
    -H 'accept: application/json, text/event-stream' -H 'mcp-protocol-version: 2025-06-18' \
    -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"land\",\"arguments\":{\"summary\":\"$2\"}}}") \
    || fail "land over the session server"
  field "$reply" 'v["result"]["content"][0]["text"]'
}

# One runner of the workspace: it runs the shell agent's turns (the message is the command) and any
# session's checks.
cat >"$work/agent.sh" <<'SH'
eval "$AGENTSKY_MESSAGE"
SH
mkdir -p "$work/home" "$work/tmp"
env -u AGENTSKY_API_KEY HOME="$work/home" TMPDIR="$work/tmp" \
  "$SKY" runner --server "$URL" --key "$KEY" --name "e2e deletes" -- sh "$work/agent.sh" >"$work/runner.log" 2>&1 &
runner_pid=$!
for _ in $(seq 1 150); do grep -q 'waiting for turns' "$work/runner.log" && break; sleep 0.2; done
grep -q 'waiting for turns' "$work/runner.log" || { cat "$work/runner.log" >&2; fail "the runner did not start"; }

# ── 1. An echo session deletes a file and lands ──
log "deletes: an echo session deletes a file with delete_task_file and lands the delete"
started=$(mcp start_session "{\"agent_id\":\"$ECHO\",\"message\":\"hello\",\"idempotency_key\":\"del-1-$$\"}")
sid=$(field "$started" 'v["session"]["session_id"]')
task=$(field "$started" 'v["session"]["task_id"]')
finished "$sid" "$(field "$started" 'v["cursor"]')" "$(field "$started" 'v["message_id"]')" >/dev/null
curl -fsS -X PUT "$URL/v1/tasks/$task/settings" -H "Authorization: Bearer $KEY" -H 'content-type: application/json' \
  -d '{"lanes":true}' >/dev/null || fail "PUT /v1/tasks/$task/settings"
mcp write_task_file "{\"task_id\":\"$task\",\"path\":\"old.txt\",\"content\":\"old\\n\"}" >/dev/null
mcp write_task_file "{\"task_id\":\"$task\",\"path\":\"keep.txt\",\"content\":\"keep\\n\"}" >/dev/null
checks "$task" 'test ! -e old.txt && test -e keep.txt && echo checked-without-old'
said=$(say "$sid" "/delete old.txt" del-1)
grep -F 'tool_result: delete_task_file' <<<"$said" | grep -qF '"deleted":true' || fail "the delete_task_file tool: $said"
[ "$(base_paths "$task")" = ".agentsky/project.json keep.txt old.txt" ] || fail "the base before landing: $(base_paths "$task")"
ok "delete_task_file deleted old.txt in the session's lane; the base still lists it"
landed=$(land_as "$sid" "Remove old.txt")
[ "$(field "$landed" 'v["landed"]')" = true ] || fail "land: $landed"
grep -qF 'deleting old.txt' <<<"$landed" && grep -qF 'on another runner of the workspace' <<<"$landed" || fail "land's steps: $landed"
[ "$(base_paths "$task")" = ".agentsky/project.json keep.txt" ] || fail "the base after landing: $(base_paths "$task")"
ok "land ran the checks on a checkout without old.txt and carried the delete: the base no longer lists it"

# ── 2. A runner turn whose agent removes a file ──
log "deletes: a file removed in a runner turn's folder is gone from the lane, then from the base at land"
started=$(mcp start_session "{\"agent_id\":\"$SHELL_AGENT\",\"task_id\":\"$task\",\"message\":\"ls\",\"idempotency_key\":\"del-2-$$\"}")
rsid=$(field "$started" 'v["session"]["session_id"]')
listed=$(finished "$rsid" "$(field "$started" 'v["cursor"]')" "$(field "$started" 'v["message_id"]')")
grep -qF 'keep.txt' <<<"$listed" || fail "the runner's folder did not hold keep.txt: $listed"
said=$(say "$rsid" "rm keep.txt && echo removed-keep" del-2)
grep -qF 'removed-keep' <<<"$said" && grep -qF 'Deleted 1 file: keep.txt.' <<<"$said" || fail "the turn's delete: $said"
[ "$(base_paths "$task")" = ".agentsky/project.json keep.txt" ] || fail "the base before landing: $(base_paths "$task")"
said=$(say "$rsid" "test -e keep.txt && echo lane-has-keep || echo lane-has-no-keep" del-3)
grep -qF 'lane-has-no-keep' <<<"$said" || fail "the lane still holds keep.txt: $said"
ok "the runner deleted keep.txt from the lane at the turn's end; the next turn's folder (the lane) has no keep.txt, the base still has it"
checks "$task" 'test ! -e keep.txt && echo checked-without-keep'
landed=$(land_as "$rsid" "Remove keep.txt")
[ "$(field "$landed" 'v["landed"]')" = true ] || fail "land: $landed"
grep -qF 'deleting keep.txt' <<<"$landed" || fail "land's steps: $landed"
[ "$(base_paths "$task")" = ".agentsky/project.json" ] || fail "the base after landing: $(base_paths "$task")"
ok "land carried the runner's delete into the base"

log "deletes: all checks passed"
echo "deletes: $passed passed, 0 failed"
