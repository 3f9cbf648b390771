"""Forwarding an upstream's requests (elicitation, sampling, log messages) to the client of the call that caused them.

The gateway uses this: an upstream asking for input mid-call is answered by the downstream client whose call is in
flight, through the `ToolContext` the server built for that call (so it works in both protocol eras on both sides).
What an upstream says outside any call — its roots requests and its change notifications (tool, resource and
prompt lists changed, a subscribed resource updated) — goes to a `Downstream`: the gateway's server, which knows
the downstream session an isolated upstream session belongs to.
"""

from __future__ import annotations

import contextlib
from typing import Any, Protocol

from mcp import MCPError, types

from gateway.client.sessions.upstream_session import ClientCallbacks
from gateway.errors import GatewayError
from gateway.tools import BaseToolset, ReadonlyContext, ToolContext
from gateway.tools.context import InputRequired

__all__ = ["Downstream", "forwarding_callbacks"]


class Downstream(Protocol):
    """The clients a gateway serves, as its upstream sessions need them outside any tool call.

    `context` is the downstream session an upstream session belongs to (None for a session shared by all).
    """

    async def notify(
        self, source: BaseToolset, notification: types.ServerNotification, context: ReadonlyContext | None
    ) -> None:
        """Pass an upstream's change notification on to the downstream sessions it concerns."""
        ...

    async def list_roots(self, context: ReadonlyContext | None) -> types.ListRootsResult:
        """The roots of the downstream client of `context`.

        Raises:
            MCPError: that client has no roots or cannot be asked now.
        """
        ...


_MODERN_DOWNSTREAM = (
    "The gateway's client speaks MCP 2026-07-28, where a request in the middle of a tool call cannot be relayed "
    "to it yet; use a client of protocol 2025-11-25 or earlier for upstream tools that ask their user."
)


def forwarding_callbacks(
    active: list[ToolContext],
    *,
    source: BaseToolset | None = None,
    downstream: Downstream | None = None,
    owner: ReadonlyContext | None = None,
) -> ClientCallbacks:
    """Callbacks that hand the upstream's requests to the client of the newest call in `active` (calls in flight).

    A form elicitation goes to `ToolContext.elicit`, a URL one to `ToolContext.elicit_url`, sampling to
    `ToolContext.sample`, log messages to `ToolContext.log`; with no call in flight the upstream is declined.
    With a `downstream`, roots requests go to the client of the call in flight (else to `owner`, the session this
    upstream session belongs to), and change notifications to `owner`'s session (every session's, for a shared
    one).
    """

    def current() -> ToolContext | None:
        return active[-1] if active else None

    async def elicit(_context: Any, params: types.ElicitRequestParams) -> types.ElicitResult | types.ErrorData:
        tool_context = current()
        if tool_context is None:
            return types.ElicitResult(action="decline")
        try:
            if isinstance(params, types.ElicitRequestURLParams):
                return await tool_context.elicit_url(params.message, params.url, params.elicitation_id or "")
            return await tool_context.elicit(params.message, dict(params.requested_schema))
        except InputRequired:
            return types.ErrorData(code=types.INVALID_REQUEST, message=_MODERN_DOWNSTREAM)
        except Exception as exc:  # noqa: BLE001 - the upstream gets the reason as a JSON-RPC error
            return types.ErrorData(code=types.INVALID_REQUEST, message=f"The gateway's client cannot answer: {exc}")

    async def sample(
        _context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        tool_context = current()
        if tool_context is None:
            return types.ErrorData(code=types.INVALID_REQUEST, message="No client call is waiting for this request.")
        try:
            return await tool_context.sample(
                list(params.messages),
                max_tokens=params.max_tokens,
                system_prompt=params.system_prompt,
                temperature=params.temperature,
            )
        except InputRequired:
            return types.ErrorData(code=types.INVALID_REQUEST, message=_MODERN_DOWNSTREAM)
        except Exception as exc:  # noqa: BLE001 - the upstream gets the reason as a JSON-RPC error
            return types.ErrorData(code=types.INVALID_REQUEST, message=f"The gateway's client cannot answer: {exc}")

    async def log(params: types.LoggingMessageNotificationParams) -> None:
        tool_context = current()
        if tool_context is not None:
            with contextlib.suppress(GatewayError):
                await tool_context.log(params.level, params.data, params.logger)

    if downstream is None or source is None:
        return ClientCallbacks(elicitation=elicit, sampling=sample, logging=log)
    peer, toolset = downstream, source

    async def list_roots(_context: Any) -> types.ListRootsResult | types.ErrorData:
        tool_context = current()
        asking = owner
        if tool_context is not None:
            asking = ReadonlyContext(
                app_name=tool_context.app_name, user_id=tool_context.user_id, session_id=tool_context.session_id
            )
        try:
            return await peer.list_roots(asking)
        except MCPError as exc:
            return types.ErrorData(code=exc.code, message=exc.message)

    async def notify(notification: types.ServerNotification) -> None:
        await peer.notify(toolset, notification, owner)

    return ClientCallbacks(elicitation=elicit, sampling=sample, logging=log, list_roots=list_roots, notification=notify)
