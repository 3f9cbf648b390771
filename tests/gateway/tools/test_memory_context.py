"""`ToolContext.search_memory` / `add_memory` as ADK names and shapes them, and the error without a service."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

import pytest

from gateway.errors import ServiceNotConfiguredError
from gateway.state import SqliteMemoryService
from gateway.tools import MemoryEntry, SearchMemoryResponse, ToolContext

pytestmark = pytest.mark.anyio


def _use(context: ToolContext, method: str) -> Coroutine[Any, Any, object]:
    if method == "search_memory":
        return context.search_memory("colour")
    if method == "add_memory":
        return context.add_memory(memories=[MemoryEntry(content="teal")])
    return context.add_session_to_memory()


@pytest.mark.parametrize("method", ["search_memory", "add_memory", "add_session_to_memory"])
async def test_memory_without_a_service_is_a_value_error_saying_how_to_configure_one(method: str) -> None:
    use = _use(ToolContext(), method)
    with pytest.raises(ServiceNotConfiguredError) as raised:
        await use
    assert isinstance(raised.value, ValueError)
    message = str(raised.value)
    assert message.startswith("Memory service is not available")
    assert "memory_service=" in message
    assert '"memory"' in message


async def test_a_tool_context_remembers_and_finds_for_its_own_user_only() -> None:
    service = SqliteMemoryService(":memory:")
    ann = ToolContext(memory_service=service, user_id="ann")
    await ann.add_memory(memories=["I live in Lisbon.", MemoryEntry(content="My favourite colour is teal.")])
    found = await ann.search_memory("favourite colour")
    other = await ToolContext(memory_service=service, user_id="bob").search_memory("favourite colour")
    assert isinstance(found, SearchMemoryResponse)
    assert [m.content.parts[0].text for m in found.memories] == ["My favourite colour is teal."]
    assert found.memories[0].content.role == "user"
    assert other.memories == []
    await service.aclose()


async def test_a_google_adk_memory_entry_is_accepted_as_it_is() -> None:
    genai = pytest.importorskip("google.genai.types")
    adk_entry = pytest.importorskip("google.adk.memory.memory_entry").MemoryEntry
    service = SqliteMemoryService(":memory:")
    context = ToolContext(memory_service=service)
    content = genai.Content(role="user", parts=[genai.Part(text="The dog is called Rex.")])
    await context.add_memory(memories=[adk_entry(content=content, author="user", custom_metadata={"topic": "pets"})])
    (memory,) = (await context.search_memory("dog")).memories
    assert (memory.author, memory.custom_metadata) == ("user", {"topic": "pets"})
    await service.aclose()


async def test_an_mcp_session_has_no_conversation_to_add_and_says_what_to_call_instead() -> None:
    service = SqliteMemoryService(":memory:")
    with pytest.raises(ServiceNotConfiguredError, match=r"add_memory\(memories="):
        await ToolContext(memory_service=service).add_session_to_memory()
    await service.aclose()
