"""Fixtures for the Python end-to-end tests: the server is the one tests/e2e/run.sh started
(AGENTSKY_URL); REST helpers use only the standard library so a failure is about the server."""
from __future__ import annotations

import json
import os
import secrets
import urllib.error
import urllib.request
from contextlib import asynccontextmanager

import httpx2
import pytest
from jsonschema import Draft202012Validator
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

BASE = os.environ.get("AGENTSKY_URL", "").rstrip("/")


def _sandboxes_ready() -> bool:
    status = os.path.join(os.path.dirname(__file__), "..", "..", "..", "build", "sandbox", "status")
    try:
        with open(status, encoding="utf-8") as f:
            return f.read().strip() == "ready"
    except OSError:
        return False


# Whether this machine runs hosted sandboxes (scripts/sandbox.sh left `ready`): then checks with no
# person's runner online run in the session's sandbox instead of waiting for one.
SANDBOXES = _sandboxes_ready()
MCP_URL = f"{BASE}/v1/mcp"
SESSION_MCP_URL = f"{BASE}/v1/session/mcp"


def pytest_configure(config):
    if not BASE:
        raise pytest.UsageError("AGENTSKY_URL is not set: run these tests through tests/e2e/run.sh")


@pytest.fixture
def anyio_backend():
    return "asyncio"


def uniq() -> str:
    return secrets.token_hex(4)


def rest(method: str, path: str, key: str | None = None, body: dict | None = None) -> tuple[int, dict, object]:
    """One REST call: (status, headers, parsed JSON body or text)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"{BASE}{path}", data=data, method=method)
    req.add_header("accept", "application/json")
    if body is not None:
        req.add_header("content-type", "application/json")
    if key:
        req.add_header("authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            status, headers, raw = r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        status, headers, raw = e.code, dict(e.headers), e.read()
    try:
        parsed: object = json.loads(raw) if raw else None
    except ValueError:
        parsed = raw.decode(errors="replace")
    return status, headers, parsed


def expect(status: int, want: int, what: str, body: object) -> None:
    assert status == want, f"{what} -> {status} {body!r}"


class Account:
    def __init__(self) -> None:
        self.email = f"e2e-py-{uniq()}@example.com"
        status, _, body = rest("POST", "/v1/accounts", body={"name": f"Py {uniq()}", "email": self.email})
        expect(status, 201, "POST /v1/accounts", body)
        assert isinstance(body, dict)
        self.account = body["account"]
        self.workspace = body["workspace"]
        self.key: str = body["key"]["key"]
        assert self.key.startswith("ast_")
        assert sorted(body["key"]["scopes"]) == ["read", "write"]

    def create_key(self, scopes: list[str], workspace: str | None = None) -> dict:
        req: dict = {"name": f"py-{uniq()}", "scopes": scopes}
        if workspace:
            req["workspace"] = workspace
        status, _, body = rest("POST", "/v1/keys", self.key, req)
        expect(status, 201, "POST /v1/keys", body)
        assert isinstance(body, dict) and body["key"].startswith("ast_")
        return body

    def create_workspace(self) -> dict:
        status, _, body = rest("POST", "/v1/workspaces", self.key, {"name": f"Py Team {uniq()}"})
        expect(status, 201, "POST /v1/workspaces", body)
        assert isinstance(body, dict) and body["slug"]
        return body

    def create_agent(self, **extra) -> dict:
        """POST /v1/agents (echo harness); pass workspace=slug to put it in another workspace."""
        req = {"name": f"Py Echo {uniq()}", "harness": "echo", "model": "echo-1", **extra}
        status, _, body = rest("POST", "/v1/agents", self.key, req)
        expect(status, 201, "POST /v1/agents", body)
        assert isinstance(body, dict) and body["agent_id"]
        return body


@pytest.fixture(scope="session")
def account() -> Account:
    """One account for the whole run: sign-up is limited per caller address (20 a minute), so tests
    isolate themselves with fresh workspaces instead."""
    return Account()


# ---------------------------------------------------------------------------------------------------
# Schemas (issue 13): every tool call of every Python test goes through `checked`, which validates the
# result against the tool's published outputSchema with jsonschema's Draft 2020-12 validator, after
# checking every listed schema against the 2020-12 meta-schema (and that `required` names are declared).


def schema_problems(schema: dict, where: str) -> list[str]:
    """What is wrong with one listed schema: meta-schema errors, and `required` names not in `properties`."""
    problems = [f"{where}: {e.message} at {list(e.absolute_path)}" for e in
                Draft202012Validator(Draft202012Validator.META_SCHEMA).iter_errors(schema)]
    if schema.get("type") != "object":
        problems.append(f"{where}: a tool schema is an object schema")

    def walk(node: object, at: str) -> None:
        if isinstance(node, dict):
            required, declared = node.get("required"), node.get("properties", {})
            if isinstance(required, list) and isinstance(declared, dict):
                problems.extend(f"{where} {at}: `{n}` is required but not in properties"
                                for n in required if n not in declared)
            for k, v in node.items():
                walk(v, f"{at}/{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{at}/{i}")

    walk(schema, "#")
    return problems


class ToolSchemas:
    """One server's listed tools, each schema checked; validates results against outputSchema."""

    def __init__(self, tools: list, where: str) -> None:
        self.where = where
        self.names = {t.name for t in tools}
        self.output: dict[str, Draft202012Validator] = {}
        problems: list[str] = []
        for t in tools:
            problems += schema_problems(t.input_schema, f"{where} {t.name} inputSchema")
            if t.output_schema is not None:
                problems += schema_problems(t.output_schema, f"{where} {t.name} outputSchema")
                self.output[t.name] = Draft202012Validator(t.output_schema)
        assert not problems, "\n".join(problems)

    def check(self, name: str, result) -> None:
        """A success must carry structuredContent, and any structuredContent must match the outputSchema (the
        TS SDK 1.x checks it on error results too)."""
        validator = self.output.get(name)
        if validator is None or (result.is_error and result.structured_content is None):
            return
        data = result.structured_content
        assert isinstance(data, dict), f"{self.where} {name}: a tool with an outputSchema answers structuredContent"
        errors = [f"{e.message} at {list(e.absolute_path)}" for e in validator.iter_errors(data)]
        assert not errors, f"{self.where} {name}: the result does not match its outputSchema: {errors}"


def checked(client: Client, where: str) -> Client:
    """Makes every `call_tool` of an official SDK client check its result against the tool's outputSchema
    (the tool list read once, through the client). `client.tools_listed` holds the names that list gave,
    `client.tools_called` collects the names called."""
    call = client.call_tool
    listed: list[ToolSchemas] = []
    client.tools_listed = set()  # type: ignore[attr-defined]
    client.tools_called = set()  # type: ignore[attr-defined]

    async def call_tool(name: str, arguments: dict | None = None, *args, **kwargs):
        if not listed:
            listed.append(ToolSchemas((await client.list_tools()).tools, where))
            client.tools_listed = listed[0].names  # type: ignore[attr-defined]
        result = await call(name, arguments, *args, **kwargs)
        listed[0].check(name, result)
        client.tools_called.add(name)  # type: ignore[attr-defined]
        return result

    client.call_tool = call_tool  # type: ignore[method-assign]
    return client


@asynccontextmanager
async def open_client(url: str, bearer: str | None, mode: str = "auto", seen: list | None = None):
    """A connected, `checked` official `mcp.Client` on `url`; `seen` collects (status, WWW-Authenticate)
    of every HTTP response."""

    async def record(response: httpx2.Response) -> None:
        if seen is not None:
            seen.append((response.status_code, response.headers.get("www-authenticate")))

    headers = {"authorization": f"Bearer {bearer}"} if bearer else {}
    async with httpx2.AsyncClient(
        headers=headers, timeout=httpx2.Timeout(330.0), event_hooks={"response": [record]}
    ) as http:
        transport = streamable_http_client(url, http_client=http, terminate_on_close=False)
        async with Client(transport, mode=mode) as client:
            yield checked(client, url)


def tool_error(result, what: str) -> dict:
    """The API's error `{code, message}` of a tool error result, from its JSON text (an error carries no
    structuredContent, which clients check against the outputSchema)."""
    assert result.is_error, f"{what} should be a tool error: {result}"
    assert result.structured_content is None, f"{what}: no structuredContent on an error: {result}"
    err = json.loads(result.content[0].text).get("error") or {}
    assert isinstance(err.get("code"), str) and isinstance(err.get("message"), str), f"{what}: {result}"
    return err


@pytest.fixture
def connect():
    """Opens official SDK clients whose every tool result is checked against its outputSchema:
    `async with connect(url, bearer, mode) as client: ...`."""
    return open_client
