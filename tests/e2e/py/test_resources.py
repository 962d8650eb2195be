"""Resources, prompts and completions on /v1/mcp with the official Python MCP client (`mcp` 2.x), in both
connect modes (auto lands on 2026-07-28, legacy runs initialize): an agent's task file, the session's
transcript and result read back as resources; the workflow prompts list and render; completion offers the
caller's own sessions and paths; another account's task file reads as "not found" in the era's code."""
from __future__ import annotations

import time

import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import PromptReference, ResourceTemplateReference

from conftest import MCP_URL, Account, uniq

pytestmark = pytest.mark.anyio

MODES = [("auto", -32602), ("legacy", -32002)]
FILE_TEMPLATE = "agentsky://tasks/{task_id}/files/{+path}"
SESSION_FILE_TEMPLATE = "agentsky://sessions/{session_id}/files/{+path}"


def ok(result, what: str) -> dict:
    assert not result.is_error, f"{what} failed: {result}"
    return result.structured_content


async def finished_session(c) -> tuple[str, str]:
    """An echo agent's session that wrote out/report.md, read to the end of its turn: (session_id, task_id)."""
    agents = ok(await c.call_tool("list_agents", {}), "list_agents")["agents"]
    started = ok(await c.call_tool("start_session", {
        "agent_id": agents[0]["id"], "message": "/write out/report.md all good", "idempotency_key": f"py-res-{uniq()}",
    }), "start_session")
    sid, cursor, mid = started["session"]["session_id"], started["cursor"], started["message_id"]
    deadline = time.monotonic() + 120
    while True:
        assert time.monotonic() < deadline, "the turn did not finish"
        page = ok(await c.call_tool("read_session", {
            "session_id": sid, "cursor": cursor, "message_id": mid, "wait_seconds": 50,
        }), "read_session")
        cursor = page["cursor"]
        if page["turn_finished"]:
            return sid, started["session"]["task_id"]


@pytest.mark.parametrize("mode,not_found", MODES)
async def test_resources_prompts_and_completions(connect, account: Account, mode: str, not_found: int):
    account.create_agent()
    other = Account()
    async with connect(MCP_URL, account.key, mode) as c, connect(MCP_URL, other.key, mode) as o:
        caps = c.server_capabilities
        assert caps.resources is not None and caps.prompts is not None and caps.completions is not None
        sid, task_id = await finished_session(c)

        listed = (await c.list_resources()).resources
        assert any(str(r.uri) == "agentsky://help/en/getting-started" for r in listed)
        templates = [t.uri_template for t in (await c.list_resource_templates()).resource_templates]
        assert FILE_TEMPLATE in templates and SESSION_FILE_TEMPLATE in templates

        # The agent's file waits in its session's lane until it lands.
        file = (await c.read_resource(f"agentsky://sessions/{sid}/files/out/report.md")).contents[0]
        assert file.text == "all good" and file.mime_type == "text/markdown"
        with pytest.raises(MCPError):
            await c.read_resource(f"agentsky://tasks/{task_id}/files/out/report.md")
        transcript = (await c.read_resource(f"agentsky://sessions/{sid}/transcript")).contents[0].text
        assert "/write out/report.md all good" in transcript and "## agent" in transcript
        result = (await c.read_resource(f"agentsky://sessions/{sid}/result")).contents[0].text
        assert '"out/report.md"' in result

        with pytest.raises(MCPError) as refused:
            await o.read_resource(f"agentsky://sessions/{sid}/files/out/report.md")
        assert refused.value.code == not_found
        assert refused.value.error.data == {"uri": f"agentsky://sessions/{sid}/files/out/report.md"}

        prompts = {p.name: p for p in (await c.list_prompts()).prompts}
        assert set(prompts) == {"delegate_task", "split_work", "review_result", "whats_waiting"}
        review = await c.get_prompt("review_result", {"session_id": sid})
        assert review.messages[0].content.type == "resource"
        assert "record_session" in review.messages[-1].content.text
        delegate = await c.get_prompt("delegate_task", {"agent": "@helper", "task": "Summarise the report"})
        assert "start_session" in delegate.messages[-1].content.text
        assert "Summarise the report" in delegate.messages[-1].content.text
        with pytest.raises(MCPError) as missing:
            await c.get_prompt("split_work", {"goal": "Ship"})
        assert missing.value.code == -32602 and "agents" in missing.value.error.message

        sessions = await c.complete(PromptReference(type="ref/prompt", name="review_result"),
                                    {"name": "session_id", "value": sid[:6]})
        assert sid in sessions.completion.values
        theirs = await o.complete(PromptReference(type="ref/prompt", name="review_result"),
                                  {"name": "session_id", "value": ""})
        assert sid not in theirs.completion.values
        paths = await c.complete(ResourceTemplateReference(type="ref/resource", uri=SESSION_FILE_TEMPLATE),
                                 {"name": "path", "value": "out/"}, {"session_id": sid})
        assert paths.completion.values == ["out/report.md"]
        base = await c.complete(ResourceTemplateReference(type="ref/resource", uri=FILE_TEMPLATE),
                                {"name": "path", "value": "out/"}, {"task_id": task_id})
        assert base.completion.values == [], "nothing landed in the base"
