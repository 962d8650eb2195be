"""Setting a workspace up from an MCP client only (issue 36), with the official Python MCP client: a
target connected (its credentials never come back), a policy, a model secret (its name listed, never its
value), an agent, a session (its task in lanes by default; its review mode set) and a session token; then
the agent, on the session server with that token, gets access by the policy and its first `land` asks for the checks, naming
the `sky runner` that would run them when the workspace has no runner online. Every result is checked
against the tool's outputSchema."""
from __future__ import annotations

import pytest

from conftest import BASE, MCP_URL, SANDBOXES, SESSION_MCP_URL, Account, uniq

pytestmark = pytest.mark.anyio


def ok(result, what: str) -> dict:
    assert not result.is_error, f"{what} failed: {result}"
    assert result.structured_content is not None, f"{what} has structuredContent"
    return result.structured_content


async def finished(c, session_id: str, cursor: str, message_id: str) -> None:
    for _ in range(10):
        page = ok(await c.call_tool("read_session", {"session_id": session_id, "cursor": cursor,
                                                     "message_id": message_id, "wait_seconds": 20}), "read_session")
        cursor = page["cursor"]
        if page["turn_finished"]:
            return
    raise AssertionError(f"turn {message_id} did not finish")


async def test_setup_and_a_first_land_from_mcp_only(connect, account: Account):
    ws = account.create_workspace()["slug"]
    async with connect(MCP_URL, account.key, "auto") as op:
        web = ok(await op.call_tool("connect_target", {
            "workspace": ws, "name": "web", "provider": "vercel", "env": "prod",
            "credentials": {"env": {"VERCEL_TOKEN": "vt-py-setup-secret"}}}), "connect_target")
        assert "vt-py-setup-secret" not in str(web)
        ok(await op.call_tool("set_policy", {"workspace": ws, "connector_id": web["connector_id"], "scope": "read",
                                             "decision": "allow"}), "set_policy")
        ok(await op.call_tool("put_secret", {"workspace": ws, "name": "OPENAI_API_KEY", "value": "sk-py-secret"}),
           "put_secret")
        secrets = ok(await op.call_tool("list_secrets", {"workspace": ws}), "list_secrets")
        assert "OPENAI_API_KEY" in str(secrets) and "sk-py-secret" not in str(secrets)
        agent = ok(await op.call_tool("create_agent", {"workspace": ws, "name": f"Py {uniq()}", "harness": "echo",
                                                       "model": "echo-1"}), "create_agent")
        start = ok(await op.call_tool("start_session", {"agent_id": agent["agent_id"], "message": "hi",
                                                        "workspace": ws, "idempotency_key": f"py-setup-{uniq()}"}), "start_session")
        sid = start["session"]["session_id"]
        await finished(op, sid, start["cursor"], start["message_id"])
        # A new task gives each session its own lane: nothing to turn on before landing.
        assert ok(await op.call_tool("get_task", {"task_id": sid}), "get_task")["settings"]["lanes"] is True
        settings = ok(await op.call_tool("set_task_settings", {"task_id": sid, "review": "auto"}), "set_task_settings")
        assert (settings["lanes"], settings["review"]) == (True, "auto")
        wrote = ok(await op.call_tool("send_message", {"session_id": sid, "message": "/write app.txt hello",
                                                       "idempotency_key": f"py-write-{uniq()}"}), "send_message")
        await finished(op, sid, wrote["cursor"], wrote["message_id"])
        token = ok(await op.call_tool("issue_session_token", {"session_id": sid}), "issue_session_token")["token"]

    async with connect(SESSION_MCP_URL, token, "auto") as agent_client:
        grant = ok(await agent_client.call_tool("request_access", {"target": "web", "scope": ["read"],
                                                                   "reason": "read the deployments"}), "request_access")
        assert grant["status"] == "active", grant
        landed = ok(await agent_client.call_tool("land", {"summary": "Say hello"}), "land")
        assert landed["landed"] is False
        assert landed["reason"].startswith("no checks are known"), landed
        # It names what would run the checks, unless hosted sandboxes will.
        assert (f"sky runner --server {BASE}" in landed["reason"]) is not SANDBOXES, landed
