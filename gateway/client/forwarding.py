"""Forwarding an upstream's requests (elicitation, sampling, log messages) to the client of the call that caused them.

The gateway uses this: an upstream asking for input mid-call is answered by the downstream client whose call is in
flight, through the `ToolContext` the server built for that call (so it works in both protocol eras on both sides).
"""

from __future__ import annotations

import contextlib
from typing import Any

from mcp import types

from gateway.client.upstream import ClientCallbacks
from gateway.errors import GatewayError
from gateway.tools import ToolContext
from gateway.tools.context import InputRequired

__all__ = ["forwarding_callbacks"]


_MODERN_DOWNSTREAM = (
    "The gateway's client speaks MCP 2026-07-28, where a request in the middle of a tool call cannot be relayed "
    "to it yet; use a client of protocol 2025-11-25 or earlier for upstream tools that ask their user."
)


def forwarding_callbacks(active: list[ToolContext]) -> ClientCallbacks:
    """Callbacks that hand the upstream's requests to the client of the newest call in `active` (calls in flight).

    A form elicitation goes to `ToolContext.elicit`, sampling to `ToolContext.sample`, log messages to
    `ToolContext.log`; with no call in flight, or a URL elicitation, the upstream is declined.
    """

    def current() -> ToolContext | None:
        return active[-1] if active else None

    async def elicit(_context: Any, params: types.ElicitRequestParams) -> types.ElicitResult | types.ErrorData:
        tool_context = current()
        if tool_context is None or isinstance(params, types.ElicitRequestURLParams):
            return types.ElicitResult(action="decline")
        try:
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

    return ClientCallbacks(elicitation=elicit, sampling=sample, logging=log)
