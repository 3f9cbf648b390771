"""Session-scoped state for sessionless callers, as a standard client gets it without extra work.

The served tool `bump` counts calls in its session-scoped state. A default `mcp.Client()` (2026-07-28, no key, no
token) gets a new session per call; a handshake-era client keeps one for its session; a `_meta` session key keeps
one in either era; an ADK agent through `to_adk(McpToolset(...))` keeps one, because `McpToolset` sends a key of
its own, or echoes the key the server issued (docs/gateway/sessions.md, "State without a session"). Each
anonymous keyless call's result carries an issued key in `_meta`; a client that echoes it keeps the session.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any, Literal

import anyio
import httpx2
import pytest
from google.adk.agents import LlmAgent
from google.adk.events import Event
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools import FunctionTool as AdkFunctionTool
from google.adk.tools import ToolContext as AdkToolContext
from google.genai import types as genai_types
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client
from scripted_model import ScriptedModel, call, say

from gateway import McpToolset, StreamableHTTPConnectionParams, ToolContext
from gateway.adk import from_adk, to_adk
from gateway.server import SESSION_META_KEY, ToolServer
from gateway.state import InMemoryStateStore
from tests.support.loopback import serving_tools

pytestmark = pytest.mark.anyio

DEADLINE = 30.0


def bump(tool_context: ToolContext) -> dict[str, int]:
    """Count this call in the session's state; return the count."""
    count = int(tool_context.state.get("count", 0)) + 1
    tool_context.state["count"] = count
    return {"session": count}


def adk_bump(tool_context: AdkToolContext) -> dict[str, int]:
    """Count this call in the session's state; return the count (a google-adk tool, served with `from_adk`)."""
    count = int(tool_context.state.get("count", 0)) + 1
    tool_context.state["count"] = count
    return {"session": count}


adk_bump.__name__ = "bump"  # published under the same name as ours


@asynccontextmanager
async def served(*, adk: bool = False, **options: Any) -> AsyncGenerator[str]:
    tools: list[Any] = [from_adk(AdkFunctionTool(adk_bump))] if adk else [bump]
    tool_server = ToolServer(tools, name="state", state_store=InMemoryStateStore())
    async with serving_tools(tool_server, **options) as base_url:
        yield base_url


@asynccontextmanager
async def plain_client(
    base_url: str, mode: Literal["auto", "legacy"], headers: dict[str, str] | None = None
) -> AsyncGenerator[Client]:
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(DEADLINE, read=300)) as http,
        Client(streamable_http_client(f"{base_url}/mcp", http_client=http), mode=mode) as client,
    ):
        yield client


async def counts(client: Client, meta: Any = None) -> list[int]:
    results = [await client.call_tool("bump", {}, meta=meta) for _ in range(2)]
    return [int((result.structured_content or {})["session"]) for result in results]


@pytest.mark.parametrize(
    ("mode", "meta", "expected"),
    [
        ("auto", None, [1, 1]),  # anonymous, sessionless: each call its own session
        ("legacy", None, [1, 2]),  # the handshake session
        ("auto", {SESSION_META_KEY: "a-key-the-client-chose-0123456789"}, [1, 2]),
        ("legacy", {SESSION_META_KEY: "a-key-the-client-chose-0123456789"}, [1, 2]),
    ],
)
async def test_a_plain_sdk_clients_session_state_is_what_the_sessions_page_says(
    mode: Literal["auto", "legacy"], meta: Any, expected: list[int]
) -> None:
    with anyio.fail_after(DEADLINE):
        async with served() as base_url, plain_client(base_url, mode) as client:
            assert (client.protocol_version == "2026-07-28") is (mode == "auto")
            assert await counts(client, meta) == expected


def issued_key(result: types.CallToolResult) -> str | None:
    """The session key the server issued with a result (None: none issued)."""
    issued = (result.meta or {}).get(SESSION_META_KEY)
    return issued if isinstance(issued, str) else None


@pytest.mark.parametrize(
    ("mode", "server_options"),
    [
        ("auto", {}),  # 2026-07-28
        ("legacy", {"stateless": True}),  # handshake era on stateless HTTP: no session either
        ("auto", {"adk": True}),  # a served google-adk tool
    ],
)
async def test_a_sessionless_client_that_echoes_the_issued_key_keeps_its_session_state(
    mode: Literal["auto", "legacy"], server_options: dict[str, Any]
) -> None:
    with anyio.fail_after(DEADLINE):
        async with served(**server_options) as base_url, plain_client(base_url, mode) as client:
            first = await client.call_tool("bump", {})
            key = issued_key(first)
            assert key is not None
            echoed = [await client.call_tool("bump", {}, meta={SESSION_META_KEY: key}) for _ in range(2)]
            unechoed = await client.call_tool("bump", {})
    assert [int((result.structured_content or {})["session"]) for result in [first, *echoed]] == [1, 2, 3]
    assert [issued_key(result) for result in echoed] == [key, key]  # the same key, still
    assert issued_key(unechoed) not in (None, key)  # a call without it: a new session, a new key
    assert int((unechoed.structured_content or {})["session"]) == 1


async def test_no_key_is_issued_where_a_session_exists_or_the_principal_is_the_session() -> None:
    token = "tok-alice-0123456789abcdef"
    with anyio.fail_after(DEADLINE):
        async with served(auth_tokens={token: "alice"}) as base_url:
            async with plain_client(base_url, "auto", {"Authorization": f"Bearer {token}"}) as client:
                principals = [await client.call_tool("bump", {}) for _ in range(2)]
            async with plain_client(base_url, "legacy", {"Authorization": f"Bearer {token}"}) as client:
                handshake = await client.call_tool("bump", {})
    assert [int((result.structured_content or {})["session"]) for result in principals] == [1, 2]
    assert [issued_key(result) for result in [*principals, handshake]] == [None, None, None]


@pytest.mark.parametrize(
    "own_key",
    [
        {},  # a random key of its own
        {"session_meta_key": None},  # none of its own: it echoes the key the server issued
    ],
)
async def test_an_adk_agent_through_to_adk_mcp_toolset_keeps_its_session_state_across_calls(
    own_key: dict[str, Any],
) -> None:
    sessions = InMemorySessionService()
    async with served() as base_url:
        params = StreamableHTTPConnectionParams(url=f"{base_url}/mcp")
        toolset = McpToolset(connection_params=params, **own_key)
        model = ScriptedModel(script=[call("bump"), call("bump"), say("Counted.")])
        agent = LlmAgent(name="assistant", model=model, tools=[to_adk(toolset)])
        runner = Runner(app_name="app", agent=agent, session_service=sessions)
        session = await sessions.create_session(app_name="app", user_id="user")
        message = genai_types.Content(role="user", parts=[genai_types.Part(text="Count twice.")])
        events: list[Event] = []
        try:
            with anyio.fail_after(DEADLINE):
                async for event in runner.run_async(user_id="user", session_id=session.id, new_message=message):
                    events.append(event)
            modern = (await toolset.session()).modern
        finally:
            await runner.close()
            await toolset.close()
    responses = [r.response for e in events for r in e.get_function_responses() if r.name == "bump"]
    assert modern  # the sessionless era, as `mcp.Client()` speaks it
    assert [str(response) for response in responses] == [str({"session": 1}), str({"session": 2})]
