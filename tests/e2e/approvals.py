"""A request's life end to end (driven by tests/e2e/approvals.sh): stdlib only, so it runs anywhere."""

import json
import os
import pty
import secrets
import select
import subprocess
import threading
import time
import urllib.error
import urllib.request

URL = os.environ["AGENTSKY_URL"].rstrip("/")
SKY = os.environ["SKY"]


def call(method, path, key=None, body=None, timeout=70):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(URL + path, data=data, method=method)
    req.add_header("content-type", "application/json")
    if key:
        req.add_header("authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def ok(method, path, key=None, body=None):
    status, out = call(method, path, key, body)
    assert 200 <= status < 300, f"{method} {path}: {status} {out}"
    return out


def agent(token, tool, args):
    """A session tool over the session MCP endpoint: (is_error, parsed text or raw text)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}}
    out = ok("POST", "/v1/session/mcp", token, body)["result"]
    text = out["content"][0]["text"]
    if out.get("isError"):
        return True, text
    return False, json.loads(text)


def passed(what):
    print(f"  ok   {what}", flush=True)


def background(fn, *args):
    box = {}

    def run():
        t0 = time.monotonic()
        box["value"] = fn(*args)
        box["at"] = time.monotonic()
        box["took"] = box["at"] - t0

    t = threading.Thread(target=run, daemon=True)
    t.start()
    box["thread"] = t
    return box


def sky_in_a_pty(args, env):
    """Starts `sky args…` in a pseudo-terminal: its pid, the terminal's fd, and `read_until(needle, secs)`,
    which reads its output until `needle` has appeared (anywhere since it started) or fails saying what was
    read."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(SKY, [SKY, *args], env)
    seen = b""

    def read_until(needle, secs=20):
        nonlocal seen
        end = time.monotonic() + secs
        while needle not in seen:
            left = end - time.monotonic()
            assert left > 0, f"no {needle!r} in: {seen.decode(errors='replace')}"
            r, _, _ = select.select([fd], [], [], left)
            if r:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    chunk = b""
                assert chunk, f"sky exited; no {needle!r} in: {seen.decode(errors='replace')}"
                seen += chunk

    return pid, fd, read_until


def setup():
    n = secrets.token_hex(4)
    acct = ok("POST", "/v1/accounts", None, {"name": "Ada", "email": f"ada-{n}@example.com"})
    key = acct["key"]["key"]
    a = ok("POST", "/v1/agents", key, {"name": "Dev", "handle": f"dev{n}", "harness": "echo", "model": "echo-1"})

    def session(msg):
        s = ok("POST", "/v1/sessions", key, {"agent_id": a["agent_id"], "message": msg, "idempotency_key": secrets.token_hex(8)})
        sid = s["session"]["session_id"]
        return sid, ok("POST", f"/v1/sessions/{sid}/token", key)["token"]

    return key, session


def approvals_answer_a_plan_in_a_pty(key, session):
    sid, token = session("plan the schema")
    first = ok("GET", "/v1/requests", key)
    # A waiting list_requests is woken by the new request within a second.
    waiting = background(ok, "GET", f"/v1/requests?wait_seconds=20&cursor={first['cursor']}", key)
    time.sleep(1.0)
    asked_at = time.monotonic()
    asked = background(agent, token, "ask_user", {"kind": "plan", "payload": {"summary": "Add an index on users.email", "files": ["db/schema.sql"]}})
    waiting["thread"].join(25)
    listed = waiting["value"]["requests"]
    assert len(listed) == 1 and listed[0]["kind"] == "plan", listed
    woke = waiting["at"] - asked_at
    assert woke < 1.5, f"list_requests woke {woke:.2f}s after the request"
    passed(f"list_requests woken {woke:.2f}s after a new request")

    home = os.path.join("/tmp", "sky-approvals-" + secrets.token_hex(4))
    os.makedirs(home, exist_ok=True)
    env = dict(os.environ, HOME=home, XDG_CONFIG_HOME=home, AGENTSKY_API_KEY=key, AGENTSKY_URL=URL)
    pid, fd, read_until = sky_in_a_pty(["approvals", "--once"], env)

    read_until(b"[a]pprove")
    read_until(b"Add an index on users.email")
    read_until(b"plan the schema")
    os.write(fd, b"e\n")
    read_until(b"needs a note")
    os.write(fd, b"a\n")
    read_until(b"answered: approve")
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    asked["thread"].join(10)
    is_err, got = asked["value"]
    assert not is_err and got["resolution"] == {"kind": "plan", "answer": "approve"}, got
    passed("sky approvals showed the plan in a pseudo-terminal and approved it; the agent continued")


def watch_notifies_each_new_request_once_and_answers_here(key, session):
    """`sky approvals --watch` in a pseudo-terminal, with a stand-in notify-send on PATH that records its
    arguments: one notification per new request, none for what was open before, the open count in the
    terminal's title, and the first request answered at the prompt of the same command."""
    home = os.path.join("/tmp", "sky-watch-" + secrets.token_hex(4))
    bin_dir = os.path.join(home, "bin")
    os.makedirs(bin_dir)
    shown = os.path.join(home, "notifications.jsonl")
    with open(os.path.join(bin_dir, "notify-send"), "w") as f:
        f.write("#!/usr/bin/env python3\nimport json, sys\n"
                f"open({shown!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n")
    os.chmod(os.path.join(bin_dir, "notify-send"), 0o755)
    before_sid, before_token = session("asked before the watch")
    before = background(agent, before_token, "ask_user", {"kind": "question", "payload": {"prompt": "Asked before?"}})
    time.sleep(1.0)

    env = dict(os.environ, HOME=home, XDG_CONFIG_HOME=home, AGENTSKY_API_KEY=key, AGENTSKY_URL=URL,
               PATH=bin_dir + os.pathsep + os.environ["PATH"])
    pid, fd, read_until = sky_in_a_pty(["approvals", "--watch"], env)

    def notes():
        try:
            return [json.loads(line) for line in open(shown)]
        except FileNotFoundError:
            return []

    read_until(b"Asked before?")
    os.write(fd, b"\n")  # skip it here: it stays open
    read_until(b"Waiting for new requests")
    read_until("agentsky · 1 open request\x07".encode())
    asked = []
    for prompt in ("Which bucket?", "Which region?"):
        sid, token = session("watch " + prompt)
        asked.append((sid, background(agent, token, "ask_user", {"kind": "question", "payload": {"prompt": prompt}})))
        time.sleep(1.0)
    end = time.monotonic() + 10
    while len(notes()) < 2 and time.monotonic() < end:
        time.sleep(0.2)
    time.sleep(2.0)
    got = notes()
    assert len(got) == 2, f"one notification per new request, none for the one open before: {got}"
    for args, prompt in zip(got, ("Which bucket?", "Which region?")):
        assert args[:3] == ["--app-name=agentsky", "--icon=dialog-question", "--"], args
        assert args[3].startswith("Dev asks") and args[4].startswith(prompt), args
    read_until("agentsky · 3 open requests\x07".encode())
    passed("sky approvals --watch: one desktop notification per new request, the open count in the terminal's title")

    read_until(b"Which bucket?")
    os.write(fd, b"the blue one\n")
    read_until(b"answered: the blue one")
    asked[0][1]["thread"].join(10)
    is_err, got = asked[0][1]["value"]
    assert not is_err and got["resolution"]["answer"] == "the blue one", got
    read_until("agentsky · 2 open requests\x07".encode())
    os.kill(pid, 15)
    os.waitpid(pid, 0)
    for sid in (before_sid, asked[1][0]):
        ok("POST", f"/v1/sessions/{sid}/stop", key)
    before["thread"].join(10)
    passed("answered at the prompt of the same command; the title counted it")


def stop_mid_wait_releases_the_agent(key, session):
    sid, token = session("wait for me")
    asked = background(agent, token, "ask_user", {"kind": "question", "payload": {"prompt": "Which bucket?"}})
    time.sleep(1.5)
    assert "value" not in asked, "ask_user should still be waiting"
    t0 = time.monotonic()
    ok("POST", f"/v1/sessions/{sid}/stop", key)
    asked["thread"].join(10)
    took = asked["at"] - t0
    is_err, text = asked["value"]
    assert is_err and "session ended" in text, text
    assert took < 1.5, f"released {took:.2f}s after the stop"
    passed(f"stop_session released the waiting agent in {took:.2f}s with 'session ended'")


def dedupe_and_expiry(key, session):
    status, out = call("POST", "/v1/connectors", key, {"name": "web-prod", "provider": "vercel", "env": "prod", "credentials": {"env": {"VERCEL_TOKEN": "vt-e2e"}}})
    assert status == 200, out
    ok("PUT", "/v1/requests/expiry", key, {"minutes": 1})
    sid, token = session("deploy it")
    args = {"target": "web-prod", "scope": ["deploy"], "reason": "ship", "command": "vercel deploy --prod --yes"}
    one = background(agent, token, "request_access", args)
    two = background(agent, token, "request_access", args)
    time.sleep(2.0)
    listed = [r for r in ok("GET", "/v1/requests", key)["requests"] if r["session_id"] == sid]
    assert len(listed) == 1, listed
    assert listed[0]["payload"]["command"] == "vercel deploy --prod --yes", listed
    r = listed[0]
    ok("POST", f"/v1/tasks/{r['task_id']}/requests/{r['request_id']}/answer", key, {"answer": "deny", "note": "not today"})
    for box in (one, two):
        box["thread"].join(10)
    (e1, g1), (e2, g2) = one["value"], two["value"]
    assert not e1 and not e2 and g1["grantId"] == g2["grantId"], (g1, g2)
    assert g1["status"] == "denied" and g1.get("reason") == "not today", g1
    passed("two identical concurrent requests were one; the denial's reason reached both calls")

    # Expiry: a request nobody answers within the workspace's minute expires; check_grant says so.
    sid, token = session("deploy later")
    waiting = background(agent, token, "request_access", dict(args, reason="later"))
    time.sleep(2.0)
    r = [r for r in ok("GET", "/v1/requests", key)["requests"] if r["session_id"] == sid][0]
    grant = ok("GET", "/v1/audit", key)
    time.sleep(62)
    assert not [x for x in ok("GET", "/v1/requests", key)["requests"] if x["session_id"] == sid]
    status, out = call("POST", f"/v1/tasks/{r['task_id']}/requests/{r['request_id']}/answer", key, {"answer": "approve"})
    assert status == 409, out
    waiting["thread"].join(300)
    is_err, g = waiting["value"]
    if not is_err and g["status"] != "expired":
        is_err, g = agent(token, "check_grant", {"grantId": g["grantId"]})
    assert not is_err and g["status"] == "expired", g
    actions = [e["action"] for e in ok("GET", "/v1/audit?limit=500", key)["entries"] if e.get("subject") == r["request_id"]]
    assert "request_opened" in actions and "request_expired" in actions, actions
    del grant
    passed("an unanswered request expired after the workspace's minute: check_grant says expired, an answer is refused")


def main():
    key, session = setup()
    approvals_answer_a_plan_in_a_pty(key, session)
    watch_notifies_each_new_request_once_and_answers_here(key, session)
    stop_mid_wait_releases_the_agent(key, session)
    dedupe_and_expiry(key, session)


if __name__ == "__main__":
    main()
