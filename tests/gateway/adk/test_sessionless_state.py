"""Session-scoped state for sessionless callers, as a standard client gets it without extra work.

The served tool `bump` counts calls in its session-scoped state. A default `mcp.Client()` (2026-07-28, no key, no
token) gets a new session per call; a handshake-era client keeps one for its session; a `_meta` session key keeps
one in either era; an ADK agent through `to_adk(McpToolset(...))` keeps one, because `McpToolset` sends a key of
its own (docs/gateway/sessions.md, "State without a session").
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
from google.genai import types as genai_types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from scripted_model import ScriptedModel, call, say

from gateway import McpToolset, StreamableHTTPConnectionParams, ToolContext
from gateway.adk import to_adk
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


@asynccontextmanager
async def served() -> AsyncGenerator[str]:
    async with serving_tools(ToolServer([bump], name="state", state_store=InMemoryStateStore())) as base_url:
        yield base_url


@asynccontextmanager
async def plain_client(base_url: str, mode: Literal["auto", "legacy"]) -> AsyncGenerator[Client]:
    async with (
        httpx2.AsyncClient(timeout=httpx2.Timeout(DEADLINE, read=300)) as http,
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


async def test_an_adk_agent_through_to_adk_mcp_toolset_keeps_its_session_state_across_calls() -> None:
    sessions = InMemorySessionService()
    async with served() as base_url:
        toolset = McpToolset(connection_params=StreamableHTTPConnectionParams(url=f"{base_url}/mcp"))
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
