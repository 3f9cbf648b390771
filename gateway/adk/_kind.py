"""Recognising google-adk objects without importing google-adk (it is an optional extra)."""

from __future__ import annotations

from typing import Final, Literal

__all__ = ["MODEL_SIDE_HINT", "AdkKind", "adk_kind", "is_code_executor", "is_memory_service"]

AdkKind = Literal["tool", "toolset", "agent"]

_CODE_EXECUTOR: Final = ("google.adk.code_executors.base_code_executor", "BaseCodeExecutor")
_MEMORY_SERVICE: Final = ("google.adk.memory.base_memory_service", "BaseMemoryService")

MODEL_SIDE_HINT: Final = (
    "it works inside the model request instead of being called: the model itself runs google-adk's built-ins "
    "(google_search, url_context, Vertex AI and enterprise search, Maps grounding, code execution), and tools "
    "such as preload_memory only add to the prompt, so there is nothing an MCP client could call. Give it to an "
    "LlmAgent and serve that agent instead (--agent MODULE:ATTR, or the agent in ToolServer's tools)"
)
"""Why a google-adk tool without a function declaration cannot be an MCP tool, and what to do instead."""

_BASES: Final[dict[tuple[str, str], AdkKind]] = {
    ("google.adk.tools.base_tool", "BaseTool"): "tool",
    ("google.adk.tools.base_toolset", "BaseToolset"): "toolset",
    ("google.adk.agents.base_agent", "BaseAgent"): "agent",
}


def adk_kind(obj: object) -> AdkKind | None:
    """`"tool"`, `"toolset"` or `"agent"` for an instance of google-adk's base classes; None for anything else.

    Read from the class hierarchy's module names: an object of a google-adk class exists only if google-adk was
    imported by whoever made it, so nothing is imported here.
    """
    for cls in type(obj).__mro__:
        kind = _BASES.get((cls.__module__, cls.__qualname__))
        if kind is not None:
            return kind
    return None


def is_code_executor(obj: object) -> bool:
    """Whether `obj` is a google-adk code executor (`BuiltInCodeExecutor`, ...), an agent's, not a tool."""
    return any((cls.__module__, cls.__qualname__) == _CODE_EXECUTOR for cls in type(obj).__mro__)


def is_memory_service(obj: object) -> bool:
    """Whether `obj` is a google-adk memory service (`InMemoryMemoryService`, any `BaseMemoryService`)."""
    return any((cls.__module__, cls.__qualname__) == _MEMORY_SERVICE for cls in type(obj).__mro__)
