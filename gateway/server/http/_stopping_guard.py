"""`StoppingGuard`: a stopping HTTP server answers a new `tools/call` with 503 at once, before any session work.

A server told to stop lets its calls in flight finish (the shutdown grace) but takes no new one: its client is told
so with HTTP 503 and the JSON-RPC error of `RunningCalls.refused_error` (code -32000), which the SDK's client raises
as it is, and `Connection: close`, so that a load balancer or client sends its retry to another replica. Calls that
slip past this guard (a body read before the stop began, SSE's `/messages/`, stdio) are refused by `RunningCalls`
itself with the same error in a 200 answer.
"""

from __future__ import annotations

from typing import Protocol

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.server.http._json_rpc_body import parsed_message
from gateway.server.running_calls import RunningCalls

__all__ = ["StoppingGuard"]

_SERVICE_UNAVAILABLE = 503


class _Calls(Protocol):
    @property
    def refusing_calls(self) -> bool: ...


class StoppingGuard:
    """ASGI middleware behind `MalformedIdGuard` (whose parsed body it reads): refuses `tools/call` while stopping."""

    def __init__(self, app: ASGIApp, calls: _Calls) -> None:
        self._app = app
        self._calls = calls

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and self._calls.refusing_calls:
            message = parsed_message(scope)
            if message is not None and message.get("method") == "tools/call" and "id" in message:
                error = RunningCalls.refused_error().error
                body = {"jsonrpc": "2.0", "id": message["id"], "error": error.model_dump(exclude_none=True)}
                response = JSONResponse(body, status_code=_SERVICE_UNAVAILABLE, headers={"connection": "close"})
                await response(scope, receive, send)
                return
        await self._app(scope, receive, send)
