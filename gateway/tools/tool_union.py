"""`ToolUnion`: what a user may hand us as "a tool" — a callable, a `BaseTool` or a `BaseToolset`."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from gateway.errors import ToolDefinitionError
from gateway.tools.base_tool import BaseTool
from gateway.tools.base_toolset import BaseToolset
from gateway.tools.function_tool import FunctionTool

__all__ = ["ToolUnion", "as_tool"]

ToolUnion = Callable[..., Any] | BaseTool | BaseToolset
"""A plain callable (wrapped in a `FunctionTool`), any `BaseTool`, or any `BaseToolset`; google-adk's too."""


def as_tool(item: object) -> BaseTool | BaseToolset:
    """Turn one `ToolUnion` member of our own tool model into a tool or toolset: a callable becomes a `FunctionTool`.

    A google-adk object is accepted one floor up, by `gateway.adk.acceptance.as_tool` (which the server, a config
    and the hub call, and `gateway.as_tool` is), so this package never imports the bridge.

    Raises:
        ToolDefinitionError: `item` is a class or not callable at all.
    """
    if isinstance(item, BaseTool | BaseToolset):
        return item
    if inspect.isclass(item):
        raise ToolDefinitionError(
            f"{item.__qualname__} is a class, not a tool: pass an instance (a BaseTool, a BaseToolset or a "
            "callable object) or a function."
        )
    if callable(item):
        return FunctionTool(item)
    raise ToolDefinitionError(
        f"Expected a function, a BaseTool or a BaseToolset, got {type(item).__name__}: {item!r:.80}"
    )
