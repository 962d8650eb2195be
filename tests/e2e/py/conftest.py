"""Fixtures for the Python end-to-end tests: the server is the one tests/e2e/run.sh started
(AGENTSKY_URL); REST helpers use only the standard library so a failure is about the server."""
from __future__ import annotations

import json
import os
import secrets
import urllib.error
import urllib.request

import pytest

BASE = os.environ.get("AGENTSKY_URL", "").rstrip("/")
MCP_URL = f"{BASE}/v1/mcp"


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
