"""Sessions and turns with the official Python MCP client (`mcp` 2.x), in both connect modes: the
contract's "A task, start to finish" with the echo harness: list_agents, start_session (and a retry with
the same key that replays the same session, message and cursor and starts nothing), read_session with
wait_seconds until turn_finished, send_message, read, collect_result, stop_session."""
from __future__ import annotations

import time

import pytest

from conftest import MCP_URL, Account, tool_error, uniq

pytestmark = pytest.mark.anyio

MODES = ["auto", "legacy"]


def ok(result, what: str) -> dict:
    assert not result.is_error, f"{what} failed: {result}"
    assert result.structured_content is not None, f"{what} has structuredContent"
    return result.structured_content


def error_code(result, what: str) -> str:
    return tool_error(result, what)["code"]


async def read_turn(c, session_id: str, cursor: str, message_id: str) -> tuple[list[dict], str, str]:
    """read_session until turn_finished: waiting while nothing is new, at once while has_more."""
    events: list[dict] = []
    has_more = False
    deadline = time.monotonic() + 120
    while True:
        assert time.monotonic() < deadline, f"turn {message_id} did not finish: {events}"
        page = ok(
            await c.call_tool(
                "read_session",
                {"session_id": session_id, "cursor": cursor, "message_id": message_id,
                 "wait_seconds": 0 if has_more else 50},
            ),
            "read_session",
        )
        if page["events"]:
            assert page["cursor"] == page["events"][-1]["cursor"]
        else:
            assert page["cursor"] == cursor
        assert all(e["message_id"] == message_id for e in page["events"])
        events += page["events"]
        cursor, has_more = page["cursor"], page["has_more"]
        if page["turn_finished"]:
            return events, cursor, page["status"]


@pytest.mark.parametrize("mode", MODES)
async def test_a_task_start_to_finish(connect, account: Account, mode: str):
    ws = account.create_workspace()
    agent = account.create_agent(workspace=ws["slug"])
    async with connect(MCP_URL, account.key, mode) as c:
        agents = ok(await c.call_tool("list_agents", {"workspace": ws["slug"]}), "list_agents")["agents"]
        assert [a["id"] for a in agents] == [agent["agent_id"]]

        start = {"agent_id": agents[0]["id"], "message": f"hello from Python ({mode})",
                 "idempotency_key": f"py-{uniq()}", "workspace": ws["slug"]}
        first = ok(await c.call_tool("start_session", start), "start_session")
        sid = first["session"]["session_id"]
        assert sid.startswith("ses_") and first["message_id"].startswith("msg_")
        assert first["session"]["task_id"] == sid

        # A lost response, retried with the same key and inputs: the same answer, no second session.
        assert ok(await c.call_tool("start_session", start), "start_session retry") == first
        sessions = ok(await c.call_tool("list_sessions", {"workspace": ws["slug"]}), "list_sessions")["sessions"]
        assert [s["session_id"] for s in sessions] == [sid]

        events, cursor, status = await read_turn(c, sid, first["cursor"], first["message_id"])
        assert [e["type"] for e in events] == ["agent_message", "turn_end"]
        assert events[0]["text"] == f"echo: hello from Python ({mode})"
        assert events[1]["reason"] == "completed"
        assert status == "idle"

        send = {"session_id": sid, "message": "/write py/out.txt written from Python", "idempotency_key": f"py-{uniq()}"}
        sent = ok(await c.call_tool("send_message", send), "send_message")
        assert ok(await c.call_tool("send_message", send), "send_message retry") == sent
        changed = await c.call_tool("send_message", {**send, "message": "changed"})
        assert error_code(changed, "send_message, same key, changed input") == "idempotency_conflict"
        events, cursor, status = await read_turn(c, sid, sent["cursor"], sent["message_id"])
        assert [e["type"] for e in events] == ["tool_call", "tool_result", "agent_message", "turn_end"]
        assert events[2]["text"] == f"echo: {send['message']}"

        result = ok(await c.call_tool("collect_result", {"session_id": sid}), "collect_result")
        assert result["last_reply"] == f"echo: {send['message']}"
        assert result["task_id"] == sid
        assert [f["path"] for f in result["files"]] == ["py/out.txt"]
        # The file waits in the session's lane until it lands.
        file = ok(await c.call_tool("read_task_file", {"task_id": sid, "path": "py/out.txt", "session_id": sid}),
                  "read_task_file")
        assert file["content"] == "written from Python"

        stopped = ok(await c.call_tool("stop_session", {"session_id": sid}), "stop_session")
        assert stopped["status"] == "terminated"
        assert ok(await c.call_tool("get_session", {"session_id": sid}), "get_session")["status"] == "terminated"
        late = await c.call_tool("send_message", {"session_id": sid, "message": "hi", "idempotency_key": f"py-{uniq()}"})
        assert error_code(late, "send_message after stop") == "session_terminated"
        sessions = ok(await c.call_tool("list_sessions", {"workspace": ws["slug"]}), "list_sessions")["sessions"]
        assert len(sessions) == 1


@pytest.mark.parametrize("mode", MODES)
async def test_session_busy_and_the_wait_held_by_the_server(connect, account: Account, mode: str):
    ws = account.create_workspace()
    agent = account.create_agent(workspace=ws["slug"])
    async with connect(MCP_URL, account.key, mode) as c:
        first = ok(await c.call_tool("start_session", {
            "agent_id": agent["agent_id"], "message": "/sleep 2 py", "idempotency_key": f"py-{uniq()}",
            "workspace": ws["slug"]}), "start_session")
        sid = first["session"]["session_id"]
        page = ok(await c.call_tool("read_session", {"session_id": sid, "cursor": first["cursor"],
                                                     "message_id": first["message_id"], "wait_seconds": 50}), "read")
        assert [e["type"] for e in page["events"]] == ["status"]
        busy = await c.call_tool("send_message", {"session_id": sid, "message": "x", "idempotency_key": f"py-{uniq()}"})
        assert error_code(busy, "send_message while running") == "session_busy"
        t0 = time.monotonic()
        events, _, status = await read_turn(c, sid, page["cursor"], first["message_id"])
        took = time.monotonic() - t0
        assert [e["type"] for e in events] == ["agent_message", "turn_end"]
        assert took < 5, f"the wait ended when the reply landed (~2 s), took {took:.1f} s"
        assert status == "idle"
