"""`UpstreamHandshakes`: what each upstream's handshake told its client, told the gateway's clients.

An upstream's handshake would be lost at the hop: the gateway's own `initialize` result and `server/discover`
answer are its own. This layer of the server's pipeline adds two things it says there:

- its `instructions` (how to use its tools), after the gateway's own, one section per upstream that has any, in
  config order:

      ## Upstream "git" (tools named git_*)
      <what the git server said>

- on `server/discover`, the MCP Apps extension (`io.modelcontextprotocol/ui`, `gateway.hub.apps`) when an upstream
  declares it, so a host knows the apps of that upstream's tools may be rendered (a handshake-era result has no
  extensions to declare).

An upstream's handshake is read once, within its `listTimeout`, on a session opened for the reading and ended once
read (the default session itself under `sessionPolicy: shared`, which stays). An upstream that cannot be reached
then, or that wants a user's sign-in, is left out until a later handshake finds it. A reload's new upstreams are new
toolsets, read anew. `adk-mcp-gateway call`, which starts only the upstream owning its tool, leaves this layer out.
"""

from __future__ import annotations

import logging
import secrets
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

from gateway.client import McpToolset
from gateway.hub.apps import APPS_EXTENSION
from gateway.tools import ReadonlyContext

__all__ = ["UpstreamHandshakes", "section"]

logger = logging.getLogger(__name__)

_HANDSHAKES: Final = frozenset({"initialize", "server/discover"})
_DEFAULT_WAIT: Final = 10.0
_READER: Final = "adk-mcp-gateway-handshake"


def section(upstream: McpToolset, instructions: str) -> str:
    """One upstream's instructions under a heading naming it and its tools' prefix."""
    name = getattr(upstream, "key", None) or upstream.connection_params.describe()
    prefix = upstream.tool_name_prefix
    tools = f"tools named {prefix}_*" if prefix else "tools keep their names"
    return f'## Upstream "{name}" ({tools})\n{instructions.strip()}'


@dataclass(frozen=True)
class _Said:
    """What one upstream's handshake said that its clients should hear."""

    instructions: str | None
    apps: dict[str, Any] | None
    """Its MCP Apps extension settings, when it declared the extension."""


class UpstreamHandshakes:
    """Server middleware: the upstreams' instructions (and extensions) added to `initialize` and `server/discover`.

    Args:
        upstreams: the upstream toolsets now, in config order (asked on each handshake: a reload changes them).
    """

    def __init__(self, upstreams: Callable[[], Sequence[McpToolset]]) -> None:
        self._upstreams = upstreams
        self._known: weakref.WeakKeyDictionary[McpToolset, _Said] = weakref.WeakKeyDictionary()

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method not in _HANDSHAKES or not isinstance(result, dict):
            return result
        answer = dict(result)
        said = await self._said()
        merged = _merged(answer.get("instructions"), said)
        if merged is not None:
            answer["instructions"] = merged
        apps = next((s.apps for _, s in said if s.apps is not None), None)
        capabilities: Any = answer.get("capabilities")
        if ctx.method == "server/discover" and apps is not None and isinstance(capabilities, dict):
            fields = cast("dict[str, Any]", capabilities)
            extensions: Any = fields.get("extensions")
            declared = cast("dict[str, Any]", extensions) if isinstance(extensions, dict) else {}
            answer["capabilities"] = {**fields, "extensions": {APPS_EXTENSION: apps, **declared}}
        return answer

    async def _said(self) -> list[tuple[McpToolset, _Said]]:
        """What each upstream's handshake said, in config order (those not reached yet left out)."""
        upstreams = list(self._upstreams())
        unknown = [upstream for upstream in upstreams if upstream not in self._known]
        if unknown:
            async with anyio.create_task_group() as tg:
                for upstream in unknown:
                    tg.start_soon(self._ask, upstream)
        return [(upstream, self._known[upstream]) for upstream in upstreams if upstream in self._known]

    async def _ask(self, upstream: McpToolset) -> None:
        # A reader of its own, ended once read: the caller's own sessions are not known yet at its handshake (an
        # HTTP session's id comes with the answer), and a session kept for nobody would outlive every caller.
        reader = ReadonlyContext(user_id=_READER, session_id=f"{_READER}-{secrets.token_hex(8)}")
        try:
            with anyio.move_on_after(upstream.list_timeout or _DEFAULT_WAIT):
                session = await upstream.session(reader)
                client = session.client
                apps = (client.server_capabilities.extensions or {}).get(APPS_EXTENSION)
                self._known[upstream] = _Said(client.instructions, dict(apps) if apps is not None else None)
        except Exception as exc:  # noqa: BLE001 - unreachable, or wanting a user's sign-in: asked again next time
            logger.debug("No handshake of %s for now: %s", upstream.connection_params.describe(), exc)
        finally:
            with anyio.CancelScope(shield=True):
                try:
                    await upstream.release(reader)
                except Exception as exc:  # noqa: BLE001 - a session that failed to open has nothing to end
                    logger.debug("Ending the handshake reader of %s: %s", upstream.connection_params.describe(), exc)


def _merged(own: Any, said: list[tuple[McpToolset, _Said]]) -> str | None:
    """`own` instructions followed by each upstream's section (None when nobody says anything)."""
    parts = [own.strip()] if isinstance(own, str) and own.strip() else []
    parts.extend(section(upstream, s.instructions) for upstream, s in said if s.instructions and s.instructions.strip())
    return "\n\n".join(parts) if parts else None
