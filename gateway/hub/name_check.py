"""The start-up name check: no two tool sources may publish one name.

Used by `serve` (refuse to start) and `check` (report every conflict).
"""

from __future__ import annotations

import contextlib
import logging
from typing import Final

import anyio

from gateway.adk.acceptance import as_tool
from gateway.client import McpToolset
from gateway.errors import NameConflictError, UpstreamUnavailableError
from gateway.tools import BaseToolset, ReadonlyContext
from gateway.tools.tool_union import ToolUnion

__all__ = ["CONFLICT_FIX", "NAME_CHECK_SECONDS", "check_names_at_start", "local_tool_names", "name_conflicts"]

logger = logging.getLogger(__name__)

NAME_CHECK_SECONDS: Final = 10.0
"""How long `serve` waits for the upstreams' tool lists to check that no two sources publish one name."""


CONFLICT_FIX: Final = 'Give an upstream a different "prefix", or leave the tool out with "denyTools".'


async def local_tool_names(items: list[ToolUnion]) -> list[str]:
    """The names these tool sources publish (toolsets asked without a caller)."""
    names: list[str] = []
    for item in map(as_tool, items):
        tools = await item.get_tools_with_prefix(ReadonlyContext()) if isinstance(item, BaseToolset) else [item]
        names.extend(tool.name for tool in tools)
    return names


def name_conflicts(published: list[tuple[str, str]]) -> dict[str, list[str]]:
    """The tool names two or more sources publish, with those sources."""
    sources: dict[str, list[str]] = {}
    for name, source in published:
        sources.setdefault(name, []).append(source)
    return {name: where for name, where in sources.items() if len(where) > 1}


async def check_names_at_start(items: list[ToolUnion]) -> None:
    """Refuse to serve a catalog in which two sources publish one name (upstreams are asked in parallel).

    Upstreams that cannot be reached, or do not answer within `NAME_CHECK_SECONDS`, are left out of the check
    (with a warning); they are connected again when a client first needs them.

    Raises:
        NameConflictError: two sources publish the same tool name.
    """
    upstreams = [item for item in items if isinstance(item, McpToolset)]
    if not upstreams:
        return
    published: list[tuple[str, str]] = []
    context = ReadonlyContext(user_id="adk-mcp-gateway", session_id="name-check")

    async def names_of(upstream: McpToolset) -> None:
        source = getattr(upstream, "source_name", None) or upstream.connection_params.describe()
        try:
            tools = await upstream.get_tools_with_prefix(context)
        except UpstreamUnavailableError as exc:
            logger.warning("Checked tool names without %s: %s", source, exc)
            return
        published.extend((tool.name, source) for tool in tools)

    async with contextlib.AsyncExitStack() as stack:
        for upstream in upstreams:
            await stack.enter_async_context(upstream)
        with anyio.move_on_after(NAME_CHECK_SECONDS) as waited:
            async with anyio.create_task_group() as tg:
                for upstream in upstreams:
                    tg.start_soon(names_of, upstream)
        if waited.cancelled_caught:
            logger.warning(
                "Checked tool names without the upstreams that took longer than %g s to answer.", NAME_CHECK_SECONDS
            )
    published.extend((name, "local") for name in await local_tool_names([i for i in items if i not in upstreams]))
    conflicts = name_conflicts(published)
    if conflicts:
        described = "; ".join(f"{name!r} from {' and '.join(where)}" for name, where in conflicts.items())
        raise NameConflictError(f"Two tool sources publish the same name: {described}. {CONFLICT_FIX}")
