"""The HTTP front is secure by default: DNS-rebinding protection, bearer tokens, a health check that tells
anonymous callers only whether the server is ok."""

from __future__ import annotations

import json
import logging
from collections.abc import Generator
from contextlib import contextmanager
from typing import Any

import anyio
import httpx2
import pytest
from server_harness import DEADLINE, INITIALIZE, MCP_HEADERS, Era, Transport, connect, http_server

pytestmark = pytest.mark.anyio

ALICE = "tok-alice-0123456789abcdef"
BOB = "tok-bob-0123456789abcdef00"
TOKENS = {ALICE: "alice", BOB: "bob"}
LIST_TOOLS = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})


class _ErrorLog(logging.Handler):
    """Keeps the ERROR records of a logger that does not propagate to the root (uvicorn's)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextmanager
def _uvicorn_errors() -> Generator[list[str]]:
    # Attached once the server runs: uvicorn's logging set-up replaces the handlers of its loggers.
    handler = _ErrorLog()
    logger = logging.getLogger("uvicorn.error")
    logger.addHandler(handler)
    try:
        yield handler.messages
    finally:
        logger.removeHandler(handler)


async def test_a_foreign_host_or_origin_is_refused_and_loopback_is_served() -> None:
    async with http_server() as base_url, httpx2.AsyncClient(base_url=base_url) as http:
        with anyio.fail_after(DEADLINE), _uvicorn_errors() as errors:
            foreign_host = await http.post(
                "/mcp", content=json.dumps(INITIALIZE), headers={**MCP_HEADERS, "Host": "evil.example.com"}
            )
            foreign_origin = await http.post(
                "/mcp", content=json.dumps(INITIALIZE), headers={**MCP_HEADERS, "Origin": "http://evil.example.com"}
            )
            foreign_sse = await http.get("/sse", headers={"Host": "evil.example.com"})
            own_origin = await http.post(
                "/mcp", content=json.dumps(INITIALIZE), headers={**MCP_HEADERS, "Origin": base_url}
            )
    assert 400 <= foreign_host.status_code < 500
    assert foreign_origin.status_code == 403
    assert 400 <= foreign_sse.status_code < 500
    assert own_origin.status_code == 200
    assert own_origin.headers["mcp-session-id"]
    assert errors == []


@pytest.mark.parametrize(
    ("path", "method"), [("/mcp", "POST"), ("/sse", "GET"), ("/messages/?session_id=" + "0" * 32, "POST")]
)
@pytest.mark.parametrize("token", [None, "tok-mallory-0123456789ab"])
async def test_without_a_known_bearer_token_every_mcp_endpoint_answers_401(
    path: str, method: str, token: str | None
) -> None:
    headers = dict(MCP_HEADERS)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    async with http_server(auth_tokens=TOKENS) as base_url, httpx2.AsyncClient(base_url=base_url) as http:
        with anyio.fail_after(DEADLINE):
            response = await http.request(
                method, path, content=json.dumps(INITIALIZE) if method == "POST" else None, headers=headers
            )
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")


@pytest.mark.parametrize(("transport", "era"), [("http", "legacy"), ("http", "modern"), ("sse", "legacy")])
async def test_a_known_bearer_token_is_served(transport: Transport, era: Era) -> None:
    async with http_server(auth_tokens=TOKENS) as base_url, connect(transport, era, base_url, token=ALICE) as client:
        with anyio.fail_after(DEADLINE):
            result = await client.call_tool("add", {"a": 1, "b": 2})
    assert result.structured_content == {"result": 3}


async def test_a_session_cannot_be_used_with_another_principals_token() -> None:
    async with http_server(auth_tokens=TOKENS) as base_url, httpx2.AsyncClient(base_url=base_url) as http:
        with anyio.fail_after(DEADLINE):
            opened = await http.post(
                "/mcp", content=json.dumps(INITIALIZE), headers={**MCP_HEADERS, "Authorization": f"Bearer {ALICE}"}
            )
            session = opened.headers["mcp-session-id"]
            stolen = await http.post(
                "/mcp",
                content=LIST_TOOLS,
                headers={**MCP_HEADERS, "Authorization": f"Bearer {BOB}", "mcp-session-id": session},
            )
    assert opened.status_code == 200
    assert stolen.status_code == 404


async def test_healthz_says_only_ok_without_a_token_and_shows_details_with_one() -> None:
    async with http_server(auth_tokens=TOKENS) as base_url, httpx2.AsyncClient(base_url=base_url) as http:
        with anyio.fail_after(DEADLINE):
            anonymous = await http.get("/healthz")
            authorized = await http.get("/healthz", headers={"Authorization": f"Bearer {ALICE}"})
    assert (anonymous.status_code, anonymous.json()) == (200, {"status": "ok"})
    body: Any = authorized.json()
    assert authorized.status_code == 200
    assert body == {"status": "ok", "server": "adk-mcp-gateway", "event_loop": "asyncio", "upstreams": {}}


async def test_a_refused_host_or_origin_is_told_how_the_operator_can_allow_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level("WARNING")
    async with http_server() as base_url, httpx2.AsyncClient(base_url=base_url) as http:
        with anyio.fail_after(DEADLINE):
            body = json.dumps(INITIALIZE)
            foreign_host = await http.post("/mcp", content=body, headers={**MCP_HEADERS, "Host": "gw.example:8000"})
            foreign_origin = await http.post(
                "/mcp", content=body, headers={**MCP_HEADERS, "Origin": "https://app.example"}
            )
            foreign_sse = await http.get("/sse", headers={"Host": "gw.example"})
            foreign_message = await http.post(
                "/messages/?session_id=" + "0" * 32, content=body, headers={**MCP_HEADERS, "Host": "gw.example"}
            )
    assert [r.status_code for r in (foreign_host, foreign_sse, foreign_message)] == [421, 421, 421]
    assert foreign_origin.status_code == 403
    for response in (foreign_host, foreign_sse, foreign_message):
        assert "--allow-host gw.example" in response.text
    assert "--allow-host app.example" in foreign_origin.text
    assert any("--allow-host gw.example" in r.getMessage() for r in caplog.records if r.levelname == "WARNING")


@pytest.mark.parametrize(
    "suffix", ["@evil.example", ".evil.example", "/path", ":80", "#x", "\\@evil.example"], ids=repr
)
async def test_an_origin_that_only_begins_with_an_allowed_one_is_refused(suffix: str) -> None:
    """Scheme, host and port are compared whole: `http://127.0.0.1:PORT@evil.example` is evil.example's origin."""
    async with http_server() as base_url, httpx2.AsyncClient(base_url=base_url) as http:
        origin = base_url + suffix
        with anyio.fail_after(DEADLINE):
            posted = await http.post("/mcp", content=json.dumps(INITIALIZE), headers={**MCP_HEADERS, "Origin": origin})
            streamed = await http.get("/sse", headers={"Origin": origin})
            health = await http.get("/healthz", headers={"Origin": origin})
    assert (posted.status_code, streamed.status_code, health.status_code) == (403, 403, 403)
