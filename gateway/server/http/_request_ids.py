"""Requests with a malformed JSON-RPC `id` are answered -32600 (Invalid Request) with `id: null`.

An MCP request id is a string or an integer. The SDK reads `{"id": {...}, "method": "tools/list"}` (an object,
array, boolean, float or null id) as a *notification* (the id is dropped), accepts it with HTTP 202 on handshake-era
HTTP and SSE, or silently on stdio, and never answers: the client waits forever. JSON-RPC 2.0 says such a request
gets an Invalid Request error whose id is null, because the id could not be read.

* `MalformedIdGuard` reads the body of an HTTP POST before the SDK sees it (`/mcp`, SSE's `/messages/`) with the
  gateway's one parser (`gateway.server.http._json_rpc_body`), answers a body it refuses, and checks the id in the
  handshake era (the modern era's transport already answers these).
* `MalformedIdFilter` wraps a stream transport's read side (stdio), where only the parsed message is visible: a
  notification that names a client *request* method (`tools/list`, `tools/call`...) can only be a request whose id
  was dropped, so it is answered the same way.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any, Final, Protocol, Self

import anyio
from mcp import types
from mcp.shared.message import SessionMessage
from mcp.types.methods import SPEC_CLIENT_METHODS
from mcp.types.version import MODERN_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.server.http._json_rpc_body import InvalidBodyError, parse_message, remember_message

__all__ = ["MalformedIdFilter", "MalformedIdGuard", "malformed_id_error"]

_PROTOCOL_VERSION_HEADER: Final = "mcp-protocol-version"


class _Reading(Protocol):
    async def receive(self) -> SessionMessage | Exception: ...
    async def aclose(self) -> None: ...


class _Writing(Protocol):
    async def send(self, item: SessionMessage, /) -> None: ...


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, float):
        return "a number with a fraction"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return type(value).__name__


def _is_valid_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def malformed_id_error(detail: str) -> dict[str, Any]:
    """The JSON-RPC error object for a request whose id could not be read."""
    return {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": types.INVALID_REQUEST,
            "message": f"Invalid Request: {detail} A request id must be a string or an integer.",
        },
    }


class MalformedIdGuard:
    """ASGI wrapper: a POST body the gateway's parser refuses, or a handshake-era JSON-RPC request whose `id` is
    neither a string nor an integer, gets HTTP 400 with the JSON-RPC error.

    The body is read (up to `max_body_size`; a larger one is passed on whole for the SDK to refuse), its message left
    in the scope (`parsed_message`) and the body handed on unchanged when it is fine.
    """

    def __init__(self, app: ASGIApp, *, max_body_size: int) -> None:
        self._app = app
        self._max_body_size = max_body_size

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self._app(scope, receive, send)
            return
        received: list[Message] = []
        size = 0
        complete = False
        while size <= self._max_body_size:
            message = await receive()
            received.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if not message.get("more_body", False):
                complete = True
                break
        if complete and size <= self._max_body_size:
            body = b"".join(m.get("body", b"") for m in received)
            try:
                parsed = parse_message(body)
            except InvalidBodyError as exc:
                await JSONResponse(exc.error, status_code=400)(scope, receive, send)
                return
            # The modern era's transport validates ids itself.
            modern = Headers(scope=scope).get(_PROTOCOL_VERSION_HEADER) in MODERN_PROTOCOL_VERSIONS
            problem = None if modern else _id_problem(parsed)
            if problem is not None:
                await JSONResponse(malformed_id_error(problem), status_code=400)(scope, receive, send)
                return
            remember_message(scope, parsed)
            received = [{"type": "http.request", "body": body, "more_body": False}]
        await self._app(scope, _replay(received, receive), send)


def _id_problem(fields: dict[str, Any]) -> str | None:
    if "method" not in fields or "id" not in fields:
        return None
    request_id: object = fields["id"]
    if _is_valid_id(request_id):
        return None
    return f"the id of this {fields['method']!s:.64} request is {_kind(request_id)}."


def _replay(received: list[Message], receive: Receive) -> Receive:
    pending = list(received)

    async def replayed() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replayed


class MalformedIdFilter:
    """A stream transport's read side, minus the requests whose id was dropped (each answered -32600)."""

    def __init__(self, inner: _Reading, write: _Writing) -> None:
        self._inner = inner
        self._write = write

    @property
    def last_context(self) -> Any:
        """The sender's context of the last message (the SDK runs handlers in it)."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item = await self._inner.receive()
            message = item.message if isinstance(item, SessionMessage) else None
            if isinstance(message, types.JSONRPCNotification) and message.method in SPEC_CLIENT_METHODS:
                detail = f"{message.method} is a request, and its id is missing or malformed."
                error = types.JSONRPCError.model_validate(malformed_id_error(detail))
                await self._write.send(SessionMessage(error))
                continue
            return item

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream as exc:
            raise StopAsyncIteration from exc

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> bool | None:
        await self.aclose()
        return None
