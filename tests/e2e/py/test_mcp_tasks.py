"""MCP tasks with the official Python client (`mcp` 2.x) on the 2026-07-28 wire: the
`io.modelcontextprotocol/tasks` extension, written as the SDK's own `ClientExtension` with a result claim
for `resultType: "task"` that polls `tasks/get` until the task ends. start_session (echo agent) runs to
the end of its turn as a task; another is cancelled mid-turn with `tasks/cancel` (its session then takes
the next message); another account's key cannot see either."""
from __future__ import annotations

import time
from typing import Any, ClassVar, Literal

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from pydantic import ConfigDict, Field

from conftest import MCP_URL, Account, uniq

pytestmark = pytest.mark.anyio

TASKS = "io.modelcontextprotocol/tasks"


class CreateTaskResult(types.Result):
    """The handle a server answers instead of a CallToolResult (`Result & Task`)."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = Field(alias="resultType")
    task_id: str
    status: str
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None


class DetailedTask(types.Result):
    model_config = ConfigDict(extra="allow")
    task_id: str
    status: str
    status_message: str | None = None
    poll_interval_ms: int | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class TaskIdParams(types.RequestParams):
    task_id: str


class GetTask(types.Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    name_param: ClassVar[str | None] = "taskId"


class CancelTask(types.Request[TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    name_param: ClassVar[str | None] = "taskId"


async def get_task(session, task_id: str) -> DetailedTask:
    return await session.send_request(GetTask(params=TaskIdParams(task_id=task_id)), DetailedTask)


async def follow(created: CreateTaskResult, ctx: ClaimContext) -> types.CallToolResult:
    """Polls until the task ends, at the interval the server asks; the tool's result is inlined."""
    deadline = time.monotonic() + 120
    while True:
        task = await get_task(ctx.session, created.task_id)
        if task.status == "completed":
            return types.CallToolResult.model_validate(task.result)
        assert task.status in ("working", "input_required"), f"task ended {task.status}: {task}"
        assert time.monotonic() < deadline, f"task {created.task_id} did not finish"
        await anyio.sleep((task.poll_interval_ms or 1000) / 1000)


class Tasks(ClientExtension):
    identifier = TASKS

    def claims(self):
        return [ResultClaim(result_type="task", model=CreateTaskResult, resolve=follow)]


async def open_tasks_client(key: str):
    http = httpx2.AsyncClient(headers={"authorization": f"Bearer {key}"}, timeout=httpx2.Timeout(330.0))
    transport = streamable_http_client(MCP_URL, http_client=http, terminate_on_close=False)
    return http, Client(transport, mode="auto", extensions=[Tasks()])


def start_args(agent_id: str, message: str) -> dict:
    return {"agent_id": agent_id, "message": message, "idempotency_key": f"py-task-{uniq()}"}


async def test_start_session_runs_as_a_task_to_the_end_of_its_turn(account: Account):
    agent = account.create_agent()
    http, client = await open_tasks_client(account.key)
    async with http, client as c:
        assert c.session.protocol_version == "2026-07-28"
        result = await c.call_tool("start_session", start_args(agent["agent_id"], "/write out.md py was here"))
        assert not result.is_error, result
        out = result.structured_content
        assert out["turn"]["final_reply"] == "echo: /write out.md py was here"
        assert out["turn"]["end_reason"] == "completed"
        assert [f["path"] for f in out["turn"]["files"]] == ["out.md"]
        assert out["turn"]["session_id"] == out["session"]["session_id"]


async def test_a_task_is_cancelled_mid_turn_and_invisible_to_another_account(account: Account):
    agent = account.create_agent()
    other = Account()
    http, client = await open_tasks_client(account.key)
    async with http, client as c:
        await c.list_tools()
        args = start_args(agent["agent_id"], "/sleep 30")
        created = await c.session.call_tool("start_session", args, allow_claimed=True)
        assert isinstance(created, CreateTaskResult), created
        assert created.status == "working" and (created.ttl_ms or 0) > 0
        ack = await c.session.send_request(CancelTask(params=TaskIdParams(task_id=created.task_id)), types.EmptyResult)
        assert ack is not None
        task = await get_task(c.session, created.task_id)
        assert task.status == "cancelled", task
        sessions = await c.call_tool("list_sessions", {})
        session = sessions.structured_content["sessions"][0]
        assert session["status"] == "idle", "only the turn ended; the session lives on"
        # The same session takes its next message, followed as a task to its end.
        args = {"session_id": session["session_id"], "message": "after the cancel", "idempotency_key": f"py-task-{uniq()}"}
        result = await c.call_tool("send_message", args)
        assert not result.is_error, result
        assert result.structured_content["turn"]["final_reply"] == "echo: after the cancel"

    http, client = await open_tasks_client(other.key)
    async with http, client as c:
        with pytest.raises(MCPError, match="not found"):
            await get_task(c.session, created.task_id)
