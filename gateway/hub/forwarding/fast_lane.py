"""`FastLane`: a handshake-era `tools/call` of an upstream tool relayed as JSON-RPC, below the SDK's server.

The SDK's streamable HTTP server spends most of a forwarded call's time on its own machinery (a memory stream and
a task per request, the session's dispatcher, the low-level server's middleware, an SSE response object) and on
models built and dumped on both sides. For the common call that needs none of it, this ASGI wrapper around the
session manager answers the POST itself: the body is parsed once (by the HTTP front, with the parser of the
general path: `LaneSeam.message`), the call goes to the upstream as JSON-RPC on the upstream session the general path
would use (`ServerExtension.relayed_call`), and the upstream's result is written
back as the message the SDK would write, only resource URIs rewritten under a prefix: alone as a JSON body when it
is the first thing sent, else as the last event of an SSE `event: message` stream (`CallStream`).

On the fast lane (everything the gateway owes a call still happens):

* a POST to `/mcp` carrying one JSON-RPC `tools/call` request, on a live handshake-era session (its
  `mcp-session-id` booked by `HttpSessions`, created by the same credential, Host/Origin accepted, `Accept`
  naming JSON and SSE, `Content-Type` JSON), for an upstream tool the extension relays, when the server says the
  call may take the plain path (`gateway.server.extension.CallPipeline`: no layer of its pipeline applies to it,
  so no policy, tool search, credentials, pins, result cap, confirmation policy or tracer provider; the session
  already seen by the general path once, its first request other than `initialize` going there);
* the request log and metrics (`RequestObservation.relayed_call`), the upstream call's span, `active_calls`;
* progress notifications (for the request's `progressToken`) and log messages (at the session's log level) on the
  call's stream; elicitation and sampling requests the upstream makes mid-call, sent on the call's stream with
  ids of the fast lane's own (`fast-lane-N`) and answered by the client's POST of the response, which is routed
  here; roots requests go to the session's channel as on the general path;
* `notifications/cancelled` for a relayed call cancels it (the upstream is sent a cancellation by the SDK's client)
  and the call is answered -32800 "Request cancelled", as the SDK answers on this era's wire;
* an upstream that fails mid-call: the same `isError` result (or the upstream's JSON-RPC error) as the general path.

Everything else goes to the SDK unchanged (a body `MalformedIdGuard` refused, a batch among them, never gets
here): other methods, modern-era requests, JSON-response and stateless servers, requests whose `_meta` carries
more than a `progressToken` (a session key, a trace context), and a session the SDK has not served for a while (so
its idle timeout, which only the SDK's own requests reset, never ends a session in use). Those are the lane's own
questions, of the wire: whether it can answer as the SDK would. Whether the server's pipeline may be skipped it
never decides itself.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Final, cast

import anyio
from mcp import MCPError, types
from mcp.server.transport_security import TransportSecurityMiddleware
from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.hub.forwarding._call_stream import CallStream, Questions, RequestId, StreamFeatures, dump
from gateway.server.catalog import CatalogEntry
from gateway.server.extension import RelayedTool
from gateway.server.http.lane import LaneSeam
from gateway.server.identity import CallIdentity, current_principal
from gateway.server.observe.observation import error_outcome
from gateway.server.running_calls import RunningCalls
from gateway.server.tool_call import ProgressReporter, error_result
from gateway.tools import ToolContext

__all__ = ["REQUEST_CANCELLED", "FastLane"]

logger = logging.getLogger(__name__)

REQUEST_CANCELLED: Final = -32800
"""The error a cancelled request is answered with on the handshake-era wire (the SDK's `REQUEST_CANCELLED`)."""
_ALLOWED_META: Final = frozenset({"progressToken"})


def _as_id(value: object) -> RequestId | None:
    """`value` if it is a JSON-RPC id (a string or an integer), else None."""
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return None


class FastLane:
    """ASGI wrapper of the streamable HTTP app (`/mcp`) answering eligible `tools/call` requests itself.

    Args:
        seam: what the HTTP front lends (`gateway.server.http.lane`): the SDK's streamable HTTP app, which gets
            everything else, the server whose extension relays the calls, the book of open sessions, the host
            check and how often the SDK must serve a session.
    """

    def __init__(self, seam: LaneSeam) -> None:
        self._app: ASGIApp = seam.app
        self._tool_server = seam.server
        self._message = seam.message
        self._sessions = seam.sessions
        self._host_check: TransportSecurityMiddleware = seam.host_check
        self._sdk_refresh = seam.sdk_refresh
        self._questions = Questions()
        self._running: dict[tuple[str, RequestId], anyio.CancelScope] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self._app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        session_id = headers.get("mcp-session-id")
        if (
            session_id is None
            or headers.get("mcp-protocol-version") not in HANDSHAKE_PROTOCOL_VERSIONS
            or not self._sessions.bound(session_id, scope)
        ):
            await self._app(scope, receive, send)
            return
        message = self._message(scope)
        handled = (
            message is not None
            and message.get("jsonrpc") == "2.0"
            and await self._handle(message, session_id, headers, scope, send)
        )
        if not handled:
            self._sessions.served_by_sdk(session_id)
            await self._app(scope, receive, send)

    async def _handle(
        self, message: dict[str, Any], session_id: str, headers: Headers, scope: Scope, send: Send
    ) -> bool:
        """Answer `message` here if it is the fast lane's; whether it was."""
        method = message.get("method")
        request_id = _as_id(message.get("id"))
        if method is None:
            # An answer, like a cancellation, passes the checks the SDK makes of every POST (it answers a refusal).
            if not await self._allowed(headers, scope) or not self._questions.answer(session_id, message):
                return False
            await _accepted(send, session_id)
            return True
        if method == "notifications/cancelled":
            params: Any = message.get("params")
            cancelled = _as_id(cast("dict[str, Any]", params).get("requestId")) if isinstance(params, dict) else None
            running = self._running.get((session_id, cancelled)) if cancelled is not None else None
            if running is None or not await self._allowed(headers, scope):
                return False
            running.cancel()
            await _accepted(send, session_id)
            return True
        if method not in ("tools/call", "tools/list") or request_id is None or not await self._takes(headers, scope):
            return False
        if method == "tools/list":
            return await self._list(message, request_id, headers, send, session_id)
        params = message.get("params")
        if not isinstance(params, dict):
            return False
        fields = cast("dict[str, Any]", params)
        name, arguments, meta = fields.get("name"), fields.get("arguments", {}), fields.get("_meta", {})
        if (
            not isinstance(name, str)
            or not isinstance(arguments, dict)
            or not isinstance(meta, dict)
            or not _ALLOWED_META.issuperset(cast("dict[str, Any]", meta))
            or not set(fields) <= {"name", "arguments", "_meta"}
        ):
            return False
        raw_token = cast("dict[str, Any]", meta).get("progressToken")
        token = _as_id(raw_token)
        if raw_token is not None and token is None:
            return False
        identity = CallIdentity(current_principal().name, f"http:{session_id}")
        relayed = await self._tool_server.relayed_call(name, identity)
        if relayed is None:
            return False
        await self._relay(
            request_id,
            name,
            cast("dict[str, Any]", arguments),
            token,
            identity,
            relayed,
            send,
            session_id,
        )
        return True

    async def _takes(self, headers: Headers, scope: Scope) -> bool:
        """Whether the request is one the SDK would serve as a plain SSE-answered request of a live session."""
        session_id = headers.get("mcp-session-id", "")
        if self._sdk_refresh is not None and self._sessions.sdk_idle(session_id) > self._sdk_refresh:
            return False
        return await self._allowed(headers, scope)

    async def _allowed(self, headers: Headers, scope: Scope) -> bool:
        """Whether the SDK's transport would take this POST: `Accept`, then Content-Type, Host and Origin as it
        checks them (it answers a refusal)."""
        accept = headers.get("accept", "")
        if "application/json" not in accept or "text/event-stream" not in accept:
            return False
        return await self._host_check.validate_request(Request(scope), is_post=True) is None

    async def _list(
        self, message: dict[str, Any], request_id: RequestId, headers: Headers, send: Send, session_id: str
    ) -> bool:
        """Answer a `tools/list` from the page the SDK's path cached, if there is one; whether it was answered."""
        params: Any = message.get("params")
        fields = cast("dict[str, Any]", params) if isinstance(params, dict) else {}
        cursor = fields.get("cursor")
        if (params is not None and not isinstance(params, dict)) or not set(fields) <= {"cursor"}:
            return False
        if cursor is not None and not isinstance(cursor, str):
            return False
        identity = CallIdentity(current_principal().name, f"http:{session_id}")
        version = headers.get("mcp-protocol-version", "")
        started = time.perf_counter()
        page = await self._tool_server.relayed_listing(identity, version, cursor)
        if page is None:
            return False
        with self._tool_server.observation.relayed("tools/list", started=started) as record:
            record.session_owner = identity.session_owner
            await CallStream(send, session_id).write_raw(request_id, page)
        return True

    async def _relay(  # noqa: PLR0917 - private, called once
        self,
        request_id: RequestId,
        name: str,
        arguments: dict[str, Any],
        progress_token: RequestId | None,
        identity: CallIdentity,
        relayed: tuple[CatalogEntry, RelayedTool, types.LoggingLevel | None],
        send: Send,
        session_id: str,
    ) -> None:
        _entry, tool, log_level = relayed
        stream = CallStream(send, session_id)
        if self._tool_server.refusing_calls:
            # The stop began after `StoppingGuard` let this POST in: refused as `running_call` would.
            refused = RunningCalls.refused_error().error
            await stream.write({"jsonrpc": "2.0", "id": request_id, "error": dump(refused)}, last=True)
            return
        features = StreamFeatures(
            self._questions,
            stream,
            session_id=session_id,
            progress_token=progress_token,
            log_level=log_level,
            client_can=tool.client_can,
        )
        context = ToolContext(
            function_call_id=f"mcp-{request_id}",
            client=features,
            progress_sink=ProgressReporter(features),
            app_name=self._tool_server.name,
            user_id=identity.principal,
            session_id=identity.session_key,
        )
        key = (session_id, request_id)
        scope = anyio.CancelScope()
        self._running[key] = scope
        answer: dict[str, Any] = {}
        try:
            with (
                self._tool_server.running_call(scope),
                self._tool_server.observation.relayed("tools/call", name) as record,
            ):
                record.session_owner = identity.session_owner
                record.tool, record.upstream = _entry.tool.name, _entry.upstream or ""
                try:
                    with scope:
                        result = await tool.invoke(arguments, context)
                        answer = {"jsonrpc": "2.0", "id": request_id, "result": result}
                        record.outcome = "tool_error" if result.get("isError") is True else "ok"
                except MCPError as exc:
                    # The upstream's JSON-RPC error, passed on as it is (as the general path does).
                    answer = {"jsonrpc": "2.0", "id": request_id, "error": dump(exc.error)}
                    record.error_code, record.outcome = exc.error.code, error_outcome(exc.error.code)
                except Exception as exc:  # the general path's boundary too: the model reads an isError result
                    logger.exception("Tool %s raised", name)
                    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                    result = dump(error_result(text))
                    answer = {"jsonrpc": "2.0", "id": request_id, "result": result}
                    record.outcome = "tool_error"
                if scope.cancelled_caught:
                    error = {"code": REQUEST_CANCELLED, "message": self._tool_server.stop_reason or "Request cancelled"}
                    answer = {"jsonrpc": "2.0", "id": request_id, "error": error}
                    record.error_code, record.outcome = REQUEST_CANCELLED, "cancelled"
        finally:
            del self._running[key]
            # What the upstream asked and the client never answered ends with the call.
            self._questions.drop(stream)
        await stream.write(answer, last=True)


async def _accepted(send: Send, session_id: str) -> None:
    """HTTP 202, as the SDK answers a POSTed notification or response."""
    headers = [
        (b"content-type", b"application/json"),
        (b"mcp-session-id", session_id.encode()),
        (b"content-length", b"0"),
    ]
    await send({"type": "http.response.start", "status": 202, "headers": headers})
    await send({"type": "http.response.body", "body": b""})
