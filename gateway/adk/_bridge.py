"""`from_adk` and `to_adk`, once google-adk is known to be importable (see the package docstring)."""

from __future__ import annotations

from google.adk.agents import BaseAgent
from google.adk.tools.base_tool import BaseTool as AdkBaseTool
from google.adk.tools.base_toolset import BaseToolset as AdkBaseToolset

from gateway.adk._kind import MODEL_SIDE_HINT
from gateway.adk.lent_tools import LentTool, LentToolset
from gateway.adk.served_agent import AgentToolset
from gateway.adk.served_tool import AdkTool, AdkToolset
from gateway.errors import ToolDefinitionError
from gateway.tools import BaseTool, BaseToolset

__all__ = ["from_adk", "to_adk"]


def from_adk(obj: object) -> BaseTool | BaseToolset:
    """See `gateway.adk.from_adk`."""
    if isinstance(obj, AdkBaseTool):
        if obj._get_declaration() is None:  # pyright: ignore[reportPrivateUsage] - ADK's declaration API
            raise ToolDefinitionError(
                f"{obj.name!r} ({type(obj).__name__}) cannot be served over MCP: {MODEL_SIDE_HINT}."
            )
        return AdkTool(obj)
    if isinstance(obj, AdkBaseToolset):
        return AdkToolset(obj)
    if isinstance(obj, BaseAgent):
        return AgentToolset(obj)
    raise _not_convertible("from_adk", "a google-adk BaseTool, BaseToolset or agent", obj)


def to_adk(obj: object) -> LentTool | LentToolset:
    """See `gateway.adk.to_adk`."""
    if isinstance(obj, BaseTool):
        return LentTool(obj)
    if isinstance(obj, BaseToolset):
        return LentToolset(obj)
    raise _not_convertible("to_adk", "one of our BaseTools or BaseToolsets (an McpToolset, a FunctionTool, ...)", obj)


def _not_convertible(function: str, takes: str, obj: object) -> TypeError:
    """The error for a bridge function given what it does not convert, naming what it takes and what it got."""
    return TypeError(f"{function}() takes {takes}, got {type(obj).__name__}: {obj!r:.80}")
