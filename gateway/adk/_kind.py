"""Recognising google-adk objects without importing google-adk (it is an optional extra)."""

from __future__ import annotations

from typing import Final, Literal

__all__ = ["AdkKind", "adk_kind"]

AdkKind = Literal["tool", "toolset", "agent"]

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
