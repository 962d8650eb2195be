"""The official Python MCP client (`mcp` 2.3.0) over Streamable HTTP with a bearer key, in both of its
connect modes:

- `mode="auto"` (the default) sends `server/discover` at 2026-07-28 and adopts the modern era unless the
  answer is legacy evidence (mcp/client/_probe.py: any JSON-RPC error but a disjoint -32022 falls back to
  `initialize`). agentsky serves both eras, so auto must end up modern.
- `mode="legacy"` runs the 2025 `initialize` handshake.
`mcp.Client` drives a `ClientSession` over `streamable_http_client`; its `.session` is that session.
"""
from __future__ import annotations

from contextlib import asynccontextmanager

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from conftest import MCP_URL, Account, uniq

pytestmark = pytest.mark.anyio

MODES = [("auto", "2026-07-28"), ("legacy", None)]
LEGACY_VERSIONS = {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}
CORE_TOOLS = {"list_workspaces", "describe_workspace", "help", "list_agents"}
# The contract's first write tool; valid arguments, so only the key's scope can refuse the call.
WRITE_TOOL = "start_session"


@asynccontextmanager
async def connect(key: str | None, mode: str, seen: list | None = None):
    """A connected `mcp.Client`; `seen` collects (status, WWW-Authenticate) of every HTTP response."""

    async def record(response: httpx2.Response) -> None:
        if seen is not None:
            seen.append((response.status_code, response.headers.get("www-authenticate")))

    headers = {"authorization": f"Bearer {key}"} if key else {}
    async with httpx2.AsyncClient(
        headers=headers, timeout=httpx2.Timeout(30.0), event_hooks={"response": [record]}
    ) as http:
        transport = streamable_http_client(MCP_URL, http_client=http, terminate_on_close=False)
        async with Client(transport, mode=mode) as client:
            yield client


def contains(exc: BaseException, kind: type) -> bool:
    """Whether `exc`, or any exception grouped inside it, is a `kind`."""
    if isinstance(exc, kind):
        return True
    return isinstance(exc, BaseExceptionGroup) and any(contains(e, kind) for e in exc.exceptions)


def structured(result, what: str) -> dict:
    assert not result.is_error, f"{what} failed: {result}"
    assert result.structured_content is not None, f"{what} has structuredContent"
    return result.structured_content


def error_code(result, what: str) -> str:
    assert result.is_error, f"{what} should be a tool error: {result}"
    err = (result.structured_content or {}).get("error") or {}
    assert isinstance(err.get("code"), str) and isinstance(err.get("message"), str), f"{what}: {result}"
    return err["code"]


@pytest.mark.parametrize("mode,modern", MODES)
async def test_connects_in_the_expected_era(account: Account, mode: str, modern: str | None):
    async with connect(account.key, mode) as c:
        if modern:
            assert c.protocol_version == modern
        else:
            assert c.protocol_version in LEGACY_VERSIONS
        assert c.server_capabilities.tools is not None


@pytest.mark.parametrize("mode,_", MODES)
async def test_lists_tools_and_reads_workspaces_and_agents(account: Account, mode: str, _):
    async with connect(account.key, mode) as c:
        tools = (await c.list_tools()).tools
        names = {t.name for t in tools}
        assert CORE_TOOLS <= names, f"missing {CORE_TOOLS - names}"

        ws = structured(await c.call_tool("list_workspaces", {}), "list_workspaces")
        mine = [w for w in ws["workspaces"] if w["slug"] == account.workspace["slug"]]
        assert len(mine) == 1, ws
        assert mine[0]["is_personal"] is True and mine[0]["is_current"] is True
        assert mine[0]["role"] == "owner"

        ws = account.create_workspace()
        args = {"workspace": ws["slug"]}
        empty = structured(await c.call_tool("list_agents", args), "list_agents")
        assert empty["agents"] == []

        agent = account.create_agent(name="Py Echo Ada", workspace=ws["slug"])
        agents = structured(await c.call_tool("list_agents", args), "list_agents")["agents"]
        assert [a["id"] for a in agents] == [agent["agent_id"]]
        assert agents[0]["name"] == "Py Echo Ada"
        assert agents[0]["harness"] == "echo"
        assert agents[0]["model"] == "echo-1"
        assert agents[0]["session_count"] == 0


@pytest.mark.parametrize("mode,_", MODES)
async def test_bad_key_is_refused_with_401(mode: str, _):
    seen: list = []
    with pytest.raises(BaseException) as raised:  # anyio wraps it in an ExceptionGroup
        async with connect(f"ast_{'z' * 43}", mode, seen):
            pass
    assert contains(raised.value, MCPError), raised.value
    assert seen, "the client made at least one request"
    for status, www in seen:
        assert status == 401, seen
        assert www and www.startswith("Bearer realm="), seen


@pytest.mark.parametrize("mode,_", MODES)
async def test_read_key_cannot_call_a_write_tool(account: Account, mode: str, _):
    ws = account.create_workspace()
    agent = account.create_agent(workspace=ws["slug"])
    read_key = account.create_key(["read"])
    async with connect(read_key["key"], mode) as c:
        # It may read ...
        agents = structured(await c.call_tool("list_agents", {"workspace": ws["slug"]}), "read key")["agents"]
        assert [a["id"] for a in agents] == [agent["agent_id"]]
        # ... but not write.
        res = await c.call_tool(
            WRITE_TOOL, {"agent_id": agent["agent_id"], "message": "hello", "idempotency_key": f"py-{uniq()}"}
        )
        assert error_code(res, f"{WRITE_TOOL} with a read key") == "insufficient_scope"


@pytest.mark.parametrize("mode,_", MODES)
async def test_locked_key_gets_universe_mismatch_for_another_workspace(account: Account, mode: str, _):
    team = account.create_workspace()
    locked = account.create_key(["read", "write"], workspace=account.workspace["slug"])
    async with connect(account.key, mode) as c:  # control: the unlocked key may use the team workspace
        structured(await c.call_tool("list_agents", {"workspace": team["slug"]}), "unlocked key on B")
    async with connect(locked["key"], mode) as c:
        structured(await c.call_tool("list_agents", {"workspace": account.workspace["slug"]}), "locked key on A")
        res = await c.call_tool("list_agents", {"workspace": team["slug"]})
        assert error_code(res, "locked key on B") == "universe_mismatch"
