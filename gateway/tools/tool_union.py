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
    """Turn one `ToolUnion` member into a tool or toolset.

    A google-adk tool, toolset or agent goes through the `adk` bridge (`gateway.adk.from_adk`).

    Raises:
        ToolDefinitionError: `item` is a class, not callable at all, or a google-adk tool the model runs itself.
        MissingExtraError: `item` is a google-adk object but the bridge cannot import google-adk.
    """
    if isinstance(item, BaseTool | BaseToolset):
        return item
    # Imported here: the bridge is optional, and it builds on this package.
    from gateway.adk import MODEL_SIDE_HINT, adk_kind, from_adk, is_code_executor

    if adk_kind(item) is not None:
        return from_adk(item)
    if is_code_executor(item):
        raise ToolDefinitionError(
            f"{type(item).__name__} is a google-adk code executor (LlmAgent(code_executor=...)), not a tool, and "
            f"cannot be served over MCP: {MODEL_SIDE_HINT}."
        )
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
