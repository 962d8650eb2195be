# shellcheck shell=bash
# Sourced by tests/e2e/run.sh and bench/run.sh: start a private `wrangler dev` on a free loopback port
# with its own state directory, wait until it answers, and stop it (and workerd under it) on exit.
# Needs env.sh sourced first.

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# start_server STATE_DIR LOG_FILE [extra wrangler dev args...]
# AGENTSKY_WRANGLER_CONFIG=path serves another wrangler config (default: wrangler.toml).
# AGENTSKY_SERVER_ARGS="--var NAME:value …" adds wrangler dev flags to every server started here (the peers
# rig starts ours through start_server: `AGENTSKY_SERVER_ARGS="--var REQUEST_LOG:all" ../shared/peers/…`).
# INSPECTOR_PORT=n puts V8's inspector (DevTools protocol) on that port (default: a free one).
# Fresh state: STATE_DIR is wiped and migrated first. Sets SERVER_PID, PORT and BASE_URL; installs an EXIT
# trap that stops the server.
start_server() {
  local state=$1 logf=$2; shift 2
  rm -rf "$state"
  mkdir -p "$state" "$(dirname "$logf")"
  local t0; t0=$(now)
  log "migrations into a fresh $state"
  local _server_cfg=(--config "${AGENTSKY_WRANGLER_CONFIG:-$ROOT/wrangler.toml}")
  (cd "$ROOT" && wrangler d1 migrations apply DB --local "${_server_cfg[@]}" --persist-to "$state") >"$logf.migrate" 2>&1 \
    || { cat "$logf.migrate" >&2; die "d1 migrations apply failed"; }
  PORT=$(free_port)
  : >"$logf"
  _launch_server "$state" "$logf" "$t0" "$@"
}

# resume_server STATE_DIR LOG_FILE [extra wrangler dev args...]
# Starts wrangler dev again on an existing STATE_DIR (nothing wiped, nothing migrated), on $PORT when it
# is set (the port the previous server had, so clients keep their URL) or a free one. The log is appended
# to. For restart tests: kill_server (or stop_server), then resume_server.
resume_server() {
  local state=$1 logf=$2; shift 2
  [ -d "$state" ] || die "resume_server: no state directory $state"
  mkdir -p "$(dirname "$logf")"
  local t0; t0=$(now)
  PORT=${PORT:-$(free_port)}
  log "resuming on the existing state in $state"
  printf '\n===== resume_server %s =====\n' "$(date -u +%FT%TZ)" >>"$logf"
  _launch_server "$state" "$logf" "$t0" "$@"
}

_launch_server() {
  local state=$1 logf=$2 t0=$3; shift 3
  local _server_cfg=(--config "${AGENTSKY_WRANGLER_CONFIG:-$ROOT/wrangler.toml}")
  BASE_URL="http://127.0.0.1:$PORT"
  sandbox_flags
  log "wrangler dev on $BASE_URL (log: $logf)${SANDBOX_FLAGS:+, without hosted sandboxes}"
  # setsid: the server gets its own process group, so stop_server ends wrangler and workerd together
  # and nothing else.
  (cd "$ROOT" && exec setsid wrangler dev "${_server_cfg[@]}" --local --ip 127.0.0.1 --port "$PORT" \
      --inspector-port "${INSPECTOR_PORT:-$(free_port)}" --persist-to "$state" --test-scheduled \
      --show-interactive-dev-session=false ${AGENTSKY_SERVER_ARGS:-} "${SANDBOX_FLAGS[@]}" "$@" </dev/null >>"$logf" 2>&1) &
  SERVER_PID=$!
  trap stop_server EXIT
  trap 'exit 130' INT TERM
  local deadline=$(( $(now) + ${SERVER_START_TIMEOUT:-180} ))
  until [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$BASE_URL/v1/health" || true)" = 200 ]; do
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
      tail -40 "$logf" >&2; die "wrangler dev exited before answering (log above: $logf)"
    fi
    if [ "$(now)" -ge "$deadline" ]; then
      tail -40 "$logf" >&2; die "GET $BASE_URL/v1/health did not answer 200 within ${SERVER_START_TIMEOUT:-180}s"
    fi
    sleep 0.3
  done
  log "server up in $(( $(now) - t0 ))s"
  export PORT BASE_URL
}

# kill_server: SIGKILL the server's whole process group at once, as a crash would (no graceful shutdown).
kill_server() {
  [ -n "${SERVER_PID:-}" ] || return 0
  kill -KILL -- "-$SERVER_PID" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 -- "-$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
  SERVER_PID=
}

stop_server() {
  [ -n "${SERVER_PID:-}" ] || return 0
  # The whole group: wrangler and the workerd it started, even if wrangler itself already died.
  kill -TERM -- "-$SERVER_PID" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 -- "-$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- "-$SERVER_PID" 2>/dev/null || true
  SERVER_PID=
}
