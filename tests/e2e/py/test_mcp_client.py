"""The official Python MCP client (`mcp` 2.3.0) over Streamable HTTP with a bearer key, in both of its
connect modes:

- `mode="auto"` (the default) sends `server/discover` at 2026-07-28 and adopts the modern era unless the
  answer is legacy evidence (mcp/client/_probe.py: any JSON-RPC error but a disjoint -32022 falls back to
  `initialize`). agentsky serves both eras, so auto must end up modern.
- `mode="legacy"` runs the 2025 `initialize` handshake.
`mcp.Client` drives a `ClientSession` over `streamable_http_client`; its `.session` is that session.
"""
from __future__ import annotations

import pytest
from mcp.shared.exceptions import MCPError

from conftest import MCP_URL, Account, tool_error, uniq

pytestmark = pytest.mark.anyio

MODES = [("auto", "2026-07-28"), ("legacy", None)]
LEGACY_VERSIONS = {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}
CORE_TOOLS = {"list_workspaces", "describe_workspace", "help", "list_agents"}
# The contract's first write tool; valid arguments, so only the key's scope can refuse the call.
WRITE_TOOL = "start_session"


def found(exc: BaseException, kind: type) -> BaseException | None:
    """`exc`, or the first exception grouped inside it, that is a `kind`."""
    if isinstance(exc, kind):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        return next((f for e in exc.exceptions if (f := found(e, kind)) is not None), None)
    return None


def structured(result, what: str) -> dict:
    assert not result.is_error, f"{what} failed: {result}"
    assert result.structured_content is not None, f"{what} has structuredContent"
    return result.structured_content


def error_code(result, what: str) -> str:
    return tool_error(result, what)["code"]


@pytest.mark.parametrize("mode,modern", MODES)
async def test_connects_in_the_expected_era(connect, account: Account, mode: str, modern: str | None):
    async with connect(MCP_URL, account.key, mode) as c:
        if modern:
            assert c.protocol_version == modern
        else:
            assert c.protocol_version in LEGACY_VERSIONS
        assert c.server_capabilities.tools is not None


@pytest.mark.parametrize("mode,_", MODES)
async def test_lists_tools_and_reads_workspaces_and_agents(connect, account: Account, mode: str, _):
    async with connect(MCP_URL, account.key, mode) as c:
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
@pytest.mark.parametrize("key,says", [(f"ast_{'z' * 43}", "unknown or revoked API key"),
                                      (None, "an API key is required")])
async def test_a_bad_or_missing_key_is_refused_with_401_and_the_client_shows_why(connect, key, says, mode, _):
    seen: list = []
    with pytest.raises(BaseException) as raised:  # anyio wraps it in an ExceptionGroup
        async with connect(MCP_URL, key, mode, seen):
            pass
    error = found(raised.value, MCPError)
    assert error is not None, raised.value
    # The JSON-RPC error body, not the SDK's stand-in "Server returned an error response".
    assert says in str(error), f"the server's message reaches the client: {error!r}"
    assert seen, "the client made at least one request"
    for status, www in seen:
        assert status == 401, seen
        assert www and www.startswith("Bearer realm="), seen


@pytest.mark.parametrize("mode,_", MODES)
async def test_read_key_cannot_call_a_write_tool(connect, account: Account, mode: str, _):
    ws = account.create_workspace()
    agent = account.create_agent(workspace=ws["slug"])
    read_key = account.create_key(["read"])
    async with connect(MCP_URL, read_key["key"], mode) as c:
        # It may read ...
        agents = structured(await c.call_tool("list_agents", {"workspace": ws["slug"]}), "read key")["agents"]
        assert [a["id"] for a in agents] == [agent["agent_id"]]
        # ... but not write.
        res = await c.call_tool(
            WRITE_TOOL, {"agent_id": agent["agent_id"], "message": "hello", "idempotency_key": f"py-{uniq()}"}
        )
        assert error_code(res, f"{WRITE_TOOL} with a read key") == "insufficient_scope"


@pytest.mark.parametrize("mode,_", MODES)
async def test_locked_key_gets_universe_mismatch_for_another_workspace(connect, account: Account, mode: str, _):
    team = account.create_workspace()
    locked = account.create_key(["read", "write"], workspace=account.workspace["slug"])
    async with connect(MCP_URL, account.key, mode) as c:  # control: the unlocked key may use the team workspace
        structured(await c.call_tool("list_agents", {"workspace": team["slug"]}), "unlocked key on B")
    async with connect(MCP_URL, locked["key"], mode) as c:
        structured(await c.call_tool("list_agents", {"workspace": account.workspace["slug"]}), "locked key on A")
        res = await c.call_tool("list_agents", {"workspace": team["slug"]})
        assert error_code(res, "locked key on B") == "universe_mismatch"
