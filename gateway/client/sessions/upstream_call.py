"""`call_once`: one `tools/call` on an upstream session, sent once and never again.

A session that dies under the call is dropped from its pool (the next call gets a fresh one) and the call fails
with an error saying it may or may not have taken effect; the upstream's own JSON-RPC errors pass through. Progress
goes to the call's `ToolContext` (and to an observer), and the context is the session's "call in flight" meanwhile,
so that what the upstream asks mid-call reaches that call's client.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from mcp import MCPError
from mcp.shared.dispatcher import ProgressFnT

from gateway.client.sessions.pool import SessionPool
from gateway.client.sessions.upstream_session import UpstreamSession
from gateway.errors import UpstreamUnavailableError
from gateway.tools import ToolContext

__all__ = ["ProgressCallback", "call_once"]

ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None]]
_Outcome = TypeVar("_Outcome")


async def call_once(
    pool: SessionPool,
    name: str,
    tool_context: ToolContext,
    send: Callable[[UpstreamSession, ProgressFnT], Awaitable[_Outcome]],
    observer: ProgressCallback | None = None,
) -> _Outcome:
    """Send a call of tool `name` with `send` on the session of `tool_context`'s identity.

    Raises:
        UpstreamUnavailableError: the upstream cannot be reached, or its session ended during the call.
        MCPError: the upstream answered with a JSON-RPC error.
    """
    slot, session = await pool.slot(tool_context)

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        if observer is not None:
            await observer(progress, total, message)
        update: dict[str, Any] = {"progress": progress, "total": total, "message": message}
        await tool_context.send_progress({key: value for key, value in update.items() if value is not None})

    slot.active.append(tool_context)
    try:
        with session.busy():
            return await send(session, on_progress)
    except MCPError as exc:
        if not pool.is_dead(session, exc):
            raise
        await pool.discard(slot, session)
        if session.expired:
            raise UpstreamUnavailableError(
                f"{session.description} no longer knows this session (the server restarted or expired it), "
                f"so the call to {name!r} was refused; it was not retried. The next call opens a new session."
            ) from exc
        raise UpstreamUnavailableError(
            f"The session with {session.description} ended during the call to {name!r} "
            f"({_cause(session, exc)}); the call was not retried, so it may or may not have taken effect. "
            "The next call opens a new session."
        ) from exc
    finally:
        slot.active.remove(tool_context)


def _cause(session: UpstreamSession, error: MCPError) -> str:
    if session.error is not None:
        return f"{error.message}: {session.error}"
    return error.message
