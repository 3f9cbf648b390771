"""`ToolCaller`: what sends an upstream tool's `tools/call`, the seam between an `McpTool` and its toolset."""

from __future__ import annotations

from typing import Any, Protocol

from mcp import types

from gateway.client.relayed_round import RelayedRound
from gateway.tasks.wire import CreateTaskResult
from gateway.tools import ToolContext

__all__ = ["ToolCaller"]


class ToolCaller(Protocol):
    """What sends an upstream tool's `tools/call` (an `McpToolset`)."""

    async def call_tool(self, name: str, args: dict[str, Any], tool_context: ToolContext) -> types.CallToolResult:
        """Call the upstream tool `name` (its name on the upstream) and return its result as sent."""
        ...

    async def call_tool_round(
        self, name: str, args: dict[str, Any], tool_context: ToolContext, answer: RelayedRound
    ) -> types.CallToolResult | types.InputRequiredResult | CreateTaskResult:
        """One round of a call relayed from a modern client; an `InputRequiredResult` returned as sent, and a task
        too when the client declared the Tasks extension."""
        ...
