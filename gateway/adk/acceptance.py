"""What a `ToolServer`, a config file and the hub accept as a tool or a memory service: ours, or google-adk's.

`gateway.tools` knows only our own tool model (`gateway.tools.tool_union.as_tool`); a google-adk object is
recognised here, one floor up, without importing google-adk (`adk_kind`), and crosses the bridge (`from_adk`,
`MemoryFromAdk`) only when one is given, so `gateway.tools` never depends on the bridge.
"""

from __future__ import annotations

from typing import Any, cast

from gateway.adk import MODEL_SIDE_HINT, adk_kind, from_adk, is_code_executor, is_memory_service
from gateway.errors import ToolDefinitionError
from gateway.tools import BaseTool, BaseToolset, tool_union
from gateway.tools.memory_service import MemoryService

__all__ = ["as_memory_service", "as_tool"]


def as_tool(item: object) -> BaseTool | BaseToolset:
    """Turn one `ToolUnion` member into a tool or toolset; a google-adk tool, toolset or agent through `from_adk`.

    Raises:
        ToolDefinitionError: `item` is a class, not callable at all, or a google-adk tool the model runs itself.
        MissingExtraError: `item` is a google-adk object but the bridge cannot import google-adk.
    """
    if not isinstance(item, BaseTool | BaseToolset):
        if adk_kind(item) is not None:
            return from_adk(item)
        if is_code_executor(item):
            raise ToolDefinitionError(
                f"{type(item).__name__} is a google-adk code executor (LlmAgent(code_executor=...)), not a tool, "
                f"and cannot be served over MCP: {MODEL_SIDE_HINT}."
            )
    return tool_union.as_tool(item)


def as_memory_service(service: object) -> MemoryService:
    """`service` as our `MemoryService`: ours as it is, google-adk's (`InMemoryMemoryService`, any
    `BaseMemoryService`) through `gateway.adk.memory_bridge.MemoryFromAdk`.

    Raises:
        TypeError: `service` is neither.
    """
    if is_memory_service(service):
        # Only a google-adk object gets here, so google-adk is installed.
        from gateway.adk.memory_bridge import MemoryFromAdk

        return MemoryFromAdk(cast("Any", service))
    if isinstance(service, MemoryService):
        return service
    raise TypeError(
        f"A memory service is ours (gateway.tools.MemoryService: search_memory, add_memory, ...) or google-adk's "
        f"BaseMemoryService, got {type(service).__name__}: {service!r:.80}"
    )
