"""The official Python SDK (`mcp` 2.x) drives every tool the server lists, in both connect modes: every
operator tool on /v1/mcp with an API key and every session-server tool on /v1/session/mcp with a session
token, each at least once and in a realistic order (the first connectors, policy and lanes set up over
REST, then the same set up again through the tools). Every result is checked against the tool's published outputSchema (conftest's
`checked`), and the set of tools called must equal the set `tools/list` names, so a new tool without a
row here fails. A row naming an operation the list does not show runs it through `manage`, as a model would.

`STEPS` is the one table: a row per call, in order. Each row names its server, its tool, its arguments
(from what earlier rows kept in `w`) and, optionally, what to keep from the answer. A row's arguments or
keep may be coroutines; `background` rows run while the following rows answer them.
"""
from __future__ import annotations

import asyncio
import inspect
import json
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any, Callable

import pytest

from conftest import MCP_URL, SESSION_MCP_URL, Account, expect, rest, uniq

pytestmark = pytest.mark.anyio

MODES = ["auto", "legacy"]


def ok(result, what: str) -> dict:
    assert not result.is_error, f"{what} failed: {result}"
    if result.structured_content is not None:
        return result.structured_content
    # Session-server tools answer JSON text (lists are arrays, which structuredContent cannot hold).
    return json.loads(result.content[0].text)


def ikey(what: str) -> str:
    return f"py-{what}-{uniq()}"


async def read_turn(w: dict, sid: str, cursor: str, message_id: str) -> None:
    """read_session until the turn has finished."""
    deadline = time.monotonic() + 120
    has_more = False
    while True:
        assert time.monotonic() < deadline, f"turn {message_id} of {sid} did not finish"
        page = ok(await w["op"].call_tool("read_session", {
            "session_id": sid, "cursor": cursor, "message_id": message_id, "wait_seconds": 0 if has_more else 50,
        }), "read_session")
        cursor, has_more = page["cursor"], page["has_more"]
        if page["turn_finished"]:
            return


async def started(w: dict, out: dict, name: str) -> None:
    """Keeps a started session's ids under `name` and reads its first turn to its end."""
    w[name] = out["session"]["session_id"]
    w.setdefault("task", out["session"]["task_id"])
    await read_turn(w, w[name], out["cursor"], out["message_id"])


async def lanes_by_default(w: dict, out: dict) -> None:
    """The first session: a new task gives it a lane, and the next session of the task one of its own."""
    await started(w, out, "sid")
    status, _, body = rest("GET", f"/v1/tasks/{w['task']}", w["key"])
    expect(status, 200, "GET /v1/tasks/{task}", body)
    assert body["settings"]["lanes"] is True, body["settings"]


async def peer_with_token(w: dict, out: dict) -> None:
    """The second session of the task (in a lane): its session token, and an SDK client on the session
    server with it, for the `agent` rows."""
    await started(w, out, "peer")
    status, _, body = rest("POST", f"/v1/sessions/{w['peer']}/token", w["key"])
    expect(status, 201, "POST /v1/sessions/{id}/token", body)
    assert isinstance(body, dict) and body["server_url"] == SESSION_MCP_URL, body
    w["agent"] = await w["stack"].enter_async_context(w["connect"](SESSION_MCP_URL, body["token"], w["mode"]))


async def open_request(w: dict) -> dict:
    """answer_request's arguments: the request the background ask_user opened, once get_task shows it."""
    deadline = time.monotonic() + 20
    while True:
        task = ok(await w["op"].call_tool("get_task", {"task_id": w["task"]}), "get_task")
        if task["open_requests"]:
            request = task["open_requests"][0]
            assert request["kind"] == "question", request
            return {"task_id": w["task"], "request_id": request["request_id"], "answer": "yes, go ahead"}
        assert time.monotonic() < deadline, "ask_user opened no request within 20 s"
        await asyncio.sleep(0.2)


async def answered(w: dict, out: dict) -> None:
    assert out["request"]["status"] == "answered", out
    asked = ok(await w["pending"].pop("ask_user"), "ask_user")
    assert asked == {"resolution": {"kind": "question", "answer": "yes, go ahead"}}, asked


async def withdrawable(w: dict) -> dict:
    """withdraw_request's arguments: the request the second background ask_user opened."""
    deadline = time.monotonic() + 20
    while True:
        task = ok(await w["op"].call_tool("get_task", {"task_id": w["task"]}), "get_task")
        if task["open_requests"]:
            return {"requestId": task["open_requests"][0]["request_id"]}
        assert time.monotonic() < deadline, "ask_user opened no request within 20 s"
        await asyncio.sleep(0.2)


async def withdrawn(w: dict, out: dict) -> None:
    assert out["status"] == "withdrawn", out
    asked = await w["pending"].pop("ask_user")
    assert asked.is_error and "withdrawn" in asked.content[0].text, asked


async def first_hit(w: dict, out: dict) -> None:
    assert out["hits"], f"search_context found the conversation: {out}"
    w["ref"] = out["hits"][0]["ref"]


def keep(name: str, *path: str | int) -> Callable[[dict, dict], None]:
    """Keeps `out[path…]` as `w[name]`."""

    def into(w: dict, out: dict) -> None:
        value: Any = out
        for p in path:
            value = value[p]
        w[name] = value

    return into


@dataclass
class Step:
    server: str  # "op": /v1/mcp with the account's key; "agent": /v1/session/mcp with the peer's token
    tool: str
    args: Callable[[dict], Any] = lambda w: {}
    keep: Callable[[dict, dict], Any] | None = None
    background: bool = False


STEPS: list[Step] = [
    # Where things are.
    Step("op", "list_workspaces"),
    Step("op", "describe_workspace", lambda w: {"workspace": w["ws"]}),
    Step("op", "manage", lambda w: {"operation": "list_members", "arguments": {"workspace": w["ws"]}}),
    Step("op", "help"),
    Step("op", "help", lambda w: {"topic": "workflow"}),
    Step("op", "help", lambda w: {"topic": "sessions", "workspace": w["ws"]}),
    Step("op", "list_agents", lambda w: {"workspace": w["ws"]}),
    Step("op", "create_agent", lambda w: {
        "name": "Py Made", "handle": w["handle"], "harness": "echo", "model": "echo-1", "workspace": w["ws"]}),
    Step("op", "get_agent", lambda w: {"agent_id": "@" + w["handle"]}),
    Step("op", "update_agent", lambda w: {"agent_id": "@" + w["handle"], "description": "made over MCP"}),
    Step("op", "search_catalog", lambda w: {"query": "echo", "workspace": w["ws"]}),
    # A session and its task.
    Step("op", "start_session", lambda w: {
        "agent_id": w["agent_id"], "message": "/write notes.md hello from the python sdk",
        "idempotency_key": ikey("start"), "workspace": w["ws"]}, lanes_by_default),
    Step("op", "read_session", lambda w: {"session_id": w["sid"], "wait_seconds": 0}),
    Step("op", "get_session", lambda w: {"session_id": w["sid"]}),
    # Setting up from the client: the task's settings, a target, a policy and a secret (issue 36).
    Step("op", "set_task_settings", lambda w: {"task_id": w["task"], "lanes": True, "base_branch": "main"}),
    Step("op", "connect_target", lambda w: {
        "name": "db", "provider": "supabase", "env": "prod", "workspace": w["ws"],
        "credentials": {"env": {"SUPABASE_ACCESS_TOKEN": "sbp-py-e2e"}}}, keep("db", "connector_id")),
    Step("op", "list_connectors", lambda w: {"workspace": w["ws"]}),
    Step("op", "set_policy", lambda w: {"connector_id": w["db"], "scope": "read", "decision": "ask", "workspace": w["ws"]}),
    Step("op", "delete_connector", lambda w: {"connector_id": w["db"], "workspace": w["ws"]}),
    Step("op", "put_secret", lambda w: {"name": "PY_E2E_SECRET", "value": "py-secret-value", "workspace": w["ws"]}),
    Step("op", "list_secrets", lambda w: {"workspace": w["ws"]}),
    Step("op", "delete_secret", lambda w: {"name": "PY_E2E_SECRET", "workspace": w["ws"]}),
    Step("op", "issue_session_token", lambda w: {"session_id": w["sid"]}),
    Step("op", "list_sessions", lambda w: {"workspace": w["ws"]}),
    Step("op", "send_message", lambda w: {
        "session_id": w["sid"], "message": "/write plan.md step one", "idempotency_key": ikey("send")},
        lambda w, out: read_turn(w, w["sid"], out["cursor"], out["message_id"])),
    Step("op", "collect_result", lambda w: {"session_id": w["sid"]}),
    Step("op", "switch_model", lambda w: {"session_id": w["sid"], "model": "echo-2", "thinking": "low"}),
    Step("op", "start_session", lambda w: {
        "agent_id": w["agent_id"], "task_id": w["task"], "message": "/write app.py print(1)",
        "idempotency_key": ikey("peer")}, peer_with_token),
    Step("op", "list_tasks", lambda w: {"workspace": w["ws"]}),
    Step("op", "get_task", lambda w: {"task_id": w["task"]}),
    Step("op", "set_task_remote", lambda w: {"task_id": w["task"], "url": "https://github.com/example/app.git",
                                             "branch": "agentsky", "connector_id": w["repo_id"]}),
    Step("op", "get_task_remote", lambda w: {"task_id": w["task"]}),
    Step("op", "set_task_remote", lambda w: {"task_id": w["task"], "url": None}),  # land below pushes nowhere
    # Files and artifacts.
    Step("op", "list_task_files", lambda w: {"task_id": w["task"]}),
    Step("op", "read_task_file", lambda w: {"task_id": w["task"], "path": "notes.md", "session_id": w["sid"]}),
    Step("op", "write_task_file", lambda w: {"task_id": w["task"], "path": "site/index.html", "content": "<h1>hi</h1>"}),
    Step("op", "publish_artifact", lambda w: {"task_id": w["task"], "path": "site/index.html"},
         keep("artifact", "artifact_id")),
    Step("op", "list_artifacts", lambda w: {"task_id": w["task"]}),
    Step("op", "share_artifact", lambda w: {"artifact_id": w["artifact"], "enabled": True}),
    Step("op", "share_session", lambda w: {"session_id": w["sid"], "view_only": True}),
    Step("op", "read_session_threads", lambda w: {"session_id": w["sid"]}),
    Step("op", "hand_off_session", lambda w: {
        "session_id": w["sid"], "agent_id": w["helper_id"], "idempotency_key": ikey("handoff"),
        "message": "carry on"}, keep("handoff", "handoff_id")),
    Step("op", "get_handoff", lambda w: {"handoff_id": w["handoff"]}),
    # The session server, as the peer's agent: targets, grants, peers, landing, asking the user.
    Step("agent", "list_targets"),
    Step("agent", "report_status", lambda w: {"note": "driving every tool"}),
    Step("agent", "request_access", lambda w: {"target": "web", "scope": ["read"], "reason": "read the logs"},
         keep("grant", "grantId")),
    Step("agent", "check_grant", lambda w: {"grantId": w["grant"]}),
    Step("agent", "get_credential", lambda w: {"grantId": w["grant"]}),
    Step("op", "list_grants", lambda w: {"workspace": w["ws"]}),
    Step("op", "revoke_grant", lambda w: {"grant_id": w["grant"], "workspace": w["ws"]}),
    Step("agent", "list_sessions"),
    Step("agent", "project_activity"),
    Step("agent", "send_message", lambda w: {"to": w["sid"], "body": "I took app.py"}),
    Step("agent", "land", lambda w: {"summary": "Add app.py"}),  # asks for the checks first
    Step("agent", "remember_command", lambda w: {"kind": "checks", "command": "python3 -m pytest"}),
    Step("agent", "land", lambda w: {"summary": "Add app.py"}),
    # Run locally with no command yet: an agent is asked (a session of the task), any session teaches it,
    # and the button runs it (no runner is online here: the answer says how to start one).
    Step("op", "ask_command", lambda w: {"session_id": w["sid"], "kind": "run"}),
    Step("agent", "remember_command", lambda w: {"kind": "run", "command": "python3 -m http.server"}),
    Step("op", "run_command", lambda w: {"session_id": w["sid"], "kind": "run"}),
    Step("agent", "ask_user", lambda w: {"kind": "question", "payload": {"prompt": "Proceed?"}}, background=True),
    Step("op", "list_requests", lambda w: {"workspace": w["ws"], "wait_seconds": 5}),
    Step("op", "answer_request", open_request, answered),
    Step("agent", "ask_user", lambda w: {"kind": "question", "payload": {"prompt": "Still needed?"}}, background=True),
    Step("agent", "withdraw_request", withdrawable, withdrawn),
    # A goal, on a session of its own.
    Step("op", "start_session", lambda w: {
        "agent_id": w["agent_id"], "message": "hello", "idempotency_key": ikey("goal"), "workspace": w["ws"]},
        lambda w, out: started(w, out, "goal_sid")),
    Step("op", "get_goal", lambda w: {"session_id": w["goal_sid"]}),
    Step("op", "set_goal", lambda w: {
        "session_id": w["goal_sid"], "objective": "write done.md", "criteria": ["done.md exists"],
        "max_iterations": 1, "idempotency_key": ikey("goal")}),
    Step("op", "clear_goal", lambda w: {"session_id": w["goal_sid"], "idempotency_key": ikey("clear")}),
    Step("op", "stop_session", lambda w: {"session_id": w["goal_sid"]}),
    # Routines.
    Step("op", "create_routine", lambda w: {
        "name": "Nightly", "message": "/write routine.md fired", "agent_id": w["agent_id"], "workspace": w["ws"]},
        keep("routine", "routine_id")),
    Step("op", "list_routines", lambda w: {"workspace": w["ws"]}),
    Step("op", "run_routine", lambda w: {"routine_id": w["routine"], "idempotency_key": ikey("run")}),
    Step("op", "update_routine", lambda w: {"routine_id": w["routine"], "enabled": False, "cron": "0 9 * * 1-5"}),
    Step("op", "resume_routine", lambda w: {"routine_id": w["routine"]}),
    Step("op", "pause_routine", lambda w: {"routine_id": w["routine"]}),
    Step("op", "delete_routine", lambda w: {"routine_id": w["routine"]}),
    # Company skills.
    Step("op", "put_skill", lambda w: {
        "name": "release-notes", "workspace": w["ws"],
        "skill_md": "---\nname: release-notes\ndescription: Write release notes from the merged changes.\n---\n# Release notes\n",
        "files": {"template.md": "## Changes\n"}}),
    Step("op", "list_skills", lambda w: {"workspace": w["ws"]}),
    Step("op", "get_skill", lambda w: {"name": "release-notes", "workspace": w["ws"]}),
    Step("op", "delete_skill", lambda w: {"name": "release-notes", "workspace": w["ws"]}),
    # Webhooks: a loopback receiver is allowed by the development opt-in run.sh sets; nothing listens there,
    # so the test event is simply retried and dead-lettered on the short schedule.
    Step("op", "create_webhook", lambda w: {
        "url": "http://127.0.0.1:9/hook", "events": ["request.opened", "turn.finished"], "workspace": w["ws"]},
        keep("webhook", "webhook", "webhook_id")),
    Step("op", "list_webhooks", lambda w: {"workspace": w["ws"]}),
    Step("op", "test_webhook", lambda w: {"webhook_id": w["webhook"], "workspace": w["ws"]}),
    Step("op", "rotate_webhook_secret", lambda w: {"webhook_id": w["webhook"], "workspace": w["ws"]}),
    Step("op", "delete_webhook", lambda w: {"webhook_id": w["webhook"], "workspace": w["ws"]}),
    # Spend, context, records, help.
    Step("op", "get_usage", lambda w: {"workspace": w["ws"]}),
    Step("op", "get_metrics", lambda w: {"workspace": w["ws"], "window": "day"}),
    # Money in: checkout links from the fake Stripe run.sh starts; no card is saved, so the top-up is off.
    Step("op", "top_up", lambda w: {"amount_cents": 1000, "workspace": w["ws"]}),
    Step("op", "save_card", lambda w: {"workspace": w["ws"]}),
    Step("op", "set_auto_top_up", lambda w: {"enabled": False, "workspace": w["ws"]}),
    Step("op", "list_receipts", lambda w: {"workspace": w["ws"]}),
    Step("op", "search_context", lambda w: {"query": "python", "scope": "conversations", "workspace": w["ws"]},
         first_hit),
    Step("op", "read_context", lambda w: {"ref": w["ref"]}),
    Step("op", "record_session", lambda w: {"session_id": w["sid"], "name": "adopted", "idempotency_key": ikey("rec")}),
    Step("op", "read_session_record", lambda w: {"session_id": w["sid"]}),
    Step("op", "save_memory", lambda w: {"text": f"py prefers short answers {uniq()}", "workspace": w["ws"]},
         keep("memory", "memory_id")),
    Step("op", "list_memory", lambda w: {"workspace": w["ws"]}),
    Step("op", "delete_memory", lambda w: {"memory_id": w["memory"]}),
    Step("op", "read_agent_performance", lambda w: {"workspace": w["ws"]}),
    Step("op", "help_search", lambda w: {"query": "connect Codex"}, keep("article", "articles", 0, "slug")),
    Step("op", "help_get", lambda w: {"slug": w["article"]}),
    # The end: the session stopped, the workspace deleted.
    Step("op", "stop_session", lambda w: {"session_id": w["sid"]}),
    Step("op", "delete_workspace", lambda w: {"workspace": w["ws"], "confirm": w["ws"]}),
]


async def resolved(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def setup(account: Account) -> dict:
    """What no tool creates: a fresh workspace, two echo agents, a connected target and a read policy."""
    ws = account.create_workspace()["slug"]
    agent = account.create_agent(workspace=ws)
    helper = account.create_agent(workspace=ws, name=f"Py Helper {uniq()}")
    body = {"name": "web", "provider": "vercel", "env": "prod", "workspace": ws,
            "credentials": {"env": {"VERCEL_TOKEN": "vt-py-e2e"}}}
    status, _, connector = rest("POST", "/v1/connectors", account.key, body)
    expect(status, 200, "POST /v1/connectors", connector)
    repo = {"name": "repo", "provider": "github", "env": "prod", "workspace": ws,
            "credentials": {"env": {"GH_TOKEN": "ghp-py-e2e"}}}
    status, _, repo = rest("POST", "/v1/connectors", account.key, repo)
    expect(status, 200, "POST /v1/connectors (github)", repo)
    status, _, policy = rest("PUT", "/v1/policies", account.key, {"workspace": ws, "scope": "read", "decision": "allow"})
    expect(status, 200, "PUT /v1/policies", policy)
    return {"key": account.key, "ws": ws, "agent_id": agent["agent_id"], "helper_id": helper["agent_id"], "pending": {},
            "handle": f"py-{uniq()}", "connector_id": connector["connector_id"], "repo_id": repo["connector_id"]}


@pytest.mark.parametrize("mode", MODES)
async def test_the_python_sdk_drives_every_listed_tool(connect, account: Account, mode: str):
    w = setup(account)
    async with AsyncExitStack() as stack:
        w.update(stack=stack, connect=connect, mode=mode)
        w["op"] = await stack.enter_async_context(connect(MCP_URL, account.key, mode))
        for n, step in enumerate(STEPS):
            client = w[step.server]
            args, tool = await resolved(step.args(w)), step.tool
            # An operation the list does not show is reached the way a model reaches it: through `manage`.
            if step.server == "op" and client.tools_listed and tool not in client.tools_listed:
                args, tool = {"operation": tool, "arguments": args}, "manage"
            what = f"row {n}: {step.server} {tool} {args}"
            if step.background:
                w["pending"][step.tool] = asyncio.ensure_future(client.call_tool(tool, args))
                continue
            out = ok(await client.call_tool(tool, args), what)
            if step.keep is not None:
                await resolved(step.keep(w, out))
        assert not w["pending"], f"background calls nobody answered: {list(w['pending'])}"

        for server, url in [("op", MCP_URL), ("agent", SESSION_MCP_URL)]:
            listed, called = w[server].tools_listed, w[server].tools_called
            assert listed, f"{url}: tools/list named no tools"
            assert called == listed, (
                f"{url}: tools listed but never driven here: {sorted(listed - called)}; "
                f"driven but not listed: {sorted(called - listed)} (add or fix a row of STEPS)"
            )
