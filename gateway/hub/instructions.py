"""`UpstreamInstructions`: what each upstream's handshake told its client, told the gateway's clients.

An upstream's `instructions` (how to use its tools) would be lost at the hop: the gateway's own `initialize` result
and `server/discover` answer are its own. This layer of the server's pipeline appends them there, after the
gateway's own instructions, one section per upstream that has any, in config order:

    ## Upstream "git" (tools named git_*)
    <what the git server said>

An upstream's instructions are asked once (from its default session, opened if none is: the same session an
unscoped listing uses), within its `listTimeout`; an upstream that cannot be reached then is left out until a
later handshake finds it. A reload's new upstreams are new toolsets, asked anew.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Sequence
from typing import Any, Final

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

from gateway.client import McpToolset
from gateway.errors import UpstreamUnavailableError

__all__ = ["UpstreamInstructions", "section"]

logger = logging.getLogger(__name__)

_HANDSHAKES: Final = frozenset({"initialize", "server/discover"})
_DEFAULT_WAIT: Final = 10.0


def section(upstream: McpToolset, instructions: str) -> str:
    """One upstream's instructions under a heading naming it and its tools' prefix."""
    name = getattr(upstream, "key", None) or upstream.connection_params.describe()
    prefix = upstream.tool_name_prefix
    tools = f"tools named {prefix}_*" if prefix else "tools keep their names"
    return f'## Upstream "{name}" ({tools})\n{instructions.strip()}'


class UpstreamInstructions:
    """Server middleware: the upstreams' instructions appended to `initialize` and `server/discover` results.

    Args:
        upstreams: the upstream toolsets now, in config order (asked on each handshake: a reload changes them).
    """

    def __init__(self, upstreams: Callable[[], Sequence[McpToolset]]) -> None:
        self._upstreams = upstreams
        self._known: weakref.WeakKeyDictionary[McpToolset, str | None] = weakref.WeakKeyDictionary()
        """What each upstream's handshake said (None: no instructions)."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method not in _HANDSHAKES or not isinstance(result, dict):
            return result
        merged = await self.merged(result.get("instructions"))
        if merged is None:
            return result
        return {**result, "instructions": merged}

    async def merged(self, own: str | None) -> str | None:
        """`own` instructions followed by each upstream's section (None when nobody says anything)."""
        upstreams = list(self._upstreams())
        unknown = [upstream for upstream in upstreams if upstream not in self._known]
        if unknown:
            async with anyio.create_task_group() as tg:
                for upstream in unknown:
                    tg.start_soon(self._ask, upstream)
        parts = [own.strip()] if own and own.strip() else []
        for upstream in upstreams:
            said = self._known.get(upstream)
            if said and said.strip():
                parts.append(section(upstream, said))
        return "\n\n".join(parts) if parts else None

    async def _ask(self, upstream: McpToolset) -> None:
        with anyio.move_on_after(upstream.list_timeout or _DEFAULT_WAIT):
            try:
                session = await upstream.session(None)
            except UpstreamUnavailableError as exc:
                logger.debug("No instructions from %s for now: %s", upstream.connection_params.describe(), exc)
                return
            self._known[upstream] = session.client.instructions
