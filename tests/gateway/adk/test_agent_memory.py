"""Long-term memory with real google-adk Runners: a served agent's `load_memory`/`preload_memory`, and our tools lent
to a Runner through `to_adk`, which use the Runner's memory service."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from google.adk.agents import LlmAgent
from google.adk.events import Event
from google.adk.memory import InMemoryMemoryService
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools import load_memory, preload_memory
from google.genai import types as genai_types
from mcp import Client
from memory_tools import our_tools, recall, remember
from scripted_model import ScriptedModel, call, say

from gateway import FunctionTool
from gateway.adk import from_adk, to_adk
from gateway.errors import ServiceNotConfiguredError
from gateway.server import SESSION_META_KEY, ToolServer
from gateway.tools import BaseTool, ToolContext

pytestmark = pytest.mark.anyio

DEADLINE = 30.0
SESSION: Any = {SESSION_META_KEY: "memory-session-0123456789abcdef"}

recall_model = ScriptedModel()
recaller = LlmAgent(name="recaller", model=recall_model, tools=[load_memory], description="Answers from memory.")
preload_model = ScriptedModel()
preloader = LlmAgent(name="preloader", model=preload_model, tools=[preload_memory], description="Knows the user.")


def _request_texts(model: ScriptedModel) -> list[str]:
    """Every text and function response the model was sent, in order."""
    found: list[str] = []
    for request in model.requests:
        for content in request.contents:
            for part in content.parts or []:
                if part.text:
                    found.append(part.text)
                if part.function_response is not None:
                    found.append(str(part.function_response.response))
    return found


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_served_agents_load_memory_finds_what_a_served_tool_remembered(mode: Any) -> None:
    recall_model.requests.clear()
    recall_model.script[:] = [call("load_memory", {"query": "favourite colour"}), say("It is teal.")]
    async with (
        ToolServer([*our_tools, from_adk(recaller)]) as server,
        Client(server.server, mode=mode) as client,
    ):
        with anyio.fail_after(DEADLINE):
            remembered = await client.call_tool("remember", {"fact": "My favourite colour is teal."}, meta=SESSION)
            answer = await client.call_tool("recaller", {"request": "What is my favourite colour?"}, meta=SESSION)
    assert not remembered.is_error, remembered.content
    assert not answer.is_error, answer.content
    responses = [text for text in _request_texts(recall_model) if "memories" in text]
    assert len(responses) == 1
    assert "My favourite colour is teal." in responses[0]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_served_agents_preload_memory_puts_the_users_memories_in_its_prompt(mode: Any) -> None:
    preload_model.requests.clear()
    preload_model.script[:] = [say("Hello again, teal lover.")]
    async with (
        ToolServer([*our_tools, from_adk(preloader)]) as server,
        Client(server.server, mode=mode) as client,
    ):
        with anyio.fail_after(DEADLINE):
            await client.call_tool("remember", {"fact": "My favourite colour is teal."}, meta=SESSION)
            answer = await client.call_tool("preloader", {"request": "Which colour do I like?"}, meta=SESSION)
    assert not answer.is_error, answer.content
    preloaded = [text for text in _request_texts(preload_model) if "PAST_CONVERSATIONS" in text]
    assert len(preloaded) == 1
    assert "My favourite colour is teal." in preloaded[0]


async def _run(agent: LlmAgent, memory: InMemoryMemoryService, text: str, sessions: InMemorySessionService) -> None:
    runner = Runner(app_name="app", agent=agent, session_service=sessions, memory_service=memory)
    session = await sessions.create_session(app_name="app", user_id="user")
    message = genai_types.Content(role="user", parts=[genai_types.Part(text=text)])
    try:
        with anyio.fail_after(DEADLINE):
            async for _ in runner.run_async(user_id="user", session_id=session.id, new_message=message):
                pass
    finally:
        await runner.close()


async def test_our_tool_lent_to_a_runner_searches_the_runners_memory_service() -> None:
    memory = InMemoryMemoryService()
    sessions = InMemorySessionService()
    earlier = await sessions.create_session(app_name="app", user_id="user")
    said = genai_types.Content(role="user", parts=[genai_types.Part(text="My favourite colour is teal.")])
    earlier.events.append(Event(author="user", content=said, invocation_id="e-1"))
    await memory.add_session_to_memory(earlier)
    model = ScriptedModel(script=[call("recall", {"query": "favourite colour"}), say("Teal.")])
    agent = LlmAgent(name="assistant", model=model, tools=[to_adk(FunctionTool(recall))])
    await _run(agent, memory, "What is my favourite colour?", sessions)
    assert "{'results': ['My favourite colour is teal.']}" in _request_texts(model)


async def test_our_tool_lent_to_a_runner_remembers_in_the_runners_memory_service() -> None:
    memory = InMemoryMemoryService()
    sessions = InMemorySessionService()
    model = ScriptedModel(script=[call("remember", {"fact": "I live in Lisbon."}), say("Noted.")])
    agent = LlmAgent(name="assistant", model=model, tools=[to_adk(FunctionTool(remember))])
    await _run(agent, memory, "Remember that I live in Lisbon.", sessions)
    found = await memory.search_memory(app_name="app", user_id="user", query="Lisbon")
    assert [part.text for entry in found.memories for part in entry.content.parts or []] == ["I live in Lisbon."]


async def test_served_load_memory_without_a_memory_service_says_how_to_configure_one() -> None:
    served = from_adk(load_memory)
    assert isinstance(served, BaseTool)
    with pytest.raises(ValueError, match=r'^Memory service is not available: .*"memory" key') as raised:
        await served.run_async(args={"query": "favourite colour"}, tool_context=ToolContext())
    assert isinstance(raised.value, ServiceNotConfiguredError)


async def _remember_session(callback_context: Any) -> None:
    await callback_context.add_session_to_memory()


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_served_agent_that_adds_its_session_to_memory_is_recalled_by_a_served_tool(mode: Any) -> None:
    model = ScriptedModel(script=[say("Noted.")])
    agent = LlmAgent(name="listener", model=model, after_agent_callback=_remember_session, description="Listens.")
    async with (
        ToolServer([*our_tools, from_adk(agent)]) as server,
        Client(server.server, mode=mode) as client,
    ):
        with anyio.fail_after(DEADLINE):
            heard = await client.call_tool("listener", {"request": "I moved to Lisbon last year."}, meta=SESSION)
            recalled = await client.call_tool("recall", {"query": "Lisbon"}, meta=SESSION)
    assert not heard.is_error, heard.content
    assert recalled.structured_content == {"results": ["I moved to Lisbon last year."]}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_tool_server_given_google_adks_memory_service_uses_it_for_every_tool(mode: Any) -> None:
    memory = InMemoryMemoryService()
    async with (
        ToolServer([*our_tools, from_adk(load_memory)], memory_service=memory) as server,
        Client(server.server, mode=mode) as client,
    ):
        with anyio.fail_after(DEADLINE):
            remembered = await client.call_tool("remember", {"fact": "My favourite colour is teal."}, meta=SESSION)
            loaded = await client.call_tool("load_memory", {"query": "favourite colour"}, meta=SESSION)
    assert not remembered.is_error, remembered.content
    assert not loaded.is_error, loaded.content
    memories = (loaded.structured_content or {})["memories"]
    assert [part["text"] for memory in memories for part in memory["content"]["parts"]] == [
        "My favourite colour is teal."
    ]
    kept = await memory.search_memory(app_name=server.name, user_id="local", query="teal")
    assert len(kept.memories) == 1


async def keep_conversation(tool_context: Any) -> dict[str, bool]:
    """Keep this conversation in long-term memory."""
    await tool_context.add_session_to_memory()
    return {"kept": True}


async def test_our_tool_lent_to_a_runner_adds_the_adk_session_to_the_runners_memory() -> None:
    memory = InMemoryMemoryService()
    sessions = InMemorySessionService()
    model = ScriptedModel(script=[call("keep_conversation"), say("Kept.")])
    agent = LlmAgent(name="assistant", model=model, tools=[to_adk(FunctionTool(keep_conversation))])
    await _run(agent, memory, "My sister lives in Porto.", sessions)
    found = await memory.search_memory(app_name="app", user_id="user", query="Porto")
    assert [part.text for entry in found.memories for part in entry.content.parts or []] == [
        "My sister lives in Porto."
    ]
