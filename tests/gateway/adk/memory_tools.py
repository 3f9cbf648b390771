"""Tools and agents that use long-term memory, written the way an ADK user writes them.

`remember` and `recall` take their context by the name `tool_context`, so the same functions run as google-adk
`FunctionTool`s (served with `serve --tools memory_tools.py:adk_tools`), as our own `FunctionTool`s
(`memory_tools.py:our_tools`) and lent to a google-adk Runner through `to_adk`. Nothing here imports the test
helpers, so a `serve` child can load the file by its path.
"""

from __future__ import annotations

from typing import Any

from google.adk.memory import InMemoryMemoryService
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.tools import FunctionTool as AdkFunctionTool
from google.adk.tools import load_memory
from google.genai import types

from gateway import FunctionTool


async def remember(fact: str, tool_context: Any) -> dict[str, str]:
    """Remember a fact about the user for later conversations."""
    entry = MemoryEntry(content=types.Content(role="user", parts=[types.Part(text=fact)]), author="user")
    await tool_context.add_memory(memories=[entry])
    return {"remembered": fact}


async def recall(query: str, tool_context: Any) -> dict[str, list[str]]:
    """Search what the user told us in earlier conversations."""
    response = await tool_context.search_memory(query)
    return {"results": [part.text for memory in response.memories for part in memory.content.parts or [] if part.text]}


adk_tools = [AdkFunctionTool(remember), AdkFunctionTool(recall), load_memory]
our_tools = [FunctionTool(remember), FunctionTool(recall)]

adk_memory = InMemoryMemoryService()
"""google-adk's own memory service, named by a config's `memory` key."""
