"""`ModernLane`: a modern (2026-07-28) `tools/call` of an upstream tool relayed as JSON-RPC, below the SDK's server.

A default `mcp.Client()` speaks 2026-07-28: every call is a POST of its own, with no session. The SDK answers one
through its single-exchange handler (a task group and a memory stream per request, a whole `tools/list` through
the server's pipeline to check `Mcp-Param-*` headers, the low-level server's middleware, the call handler's
state), where a handshake-era call of the same tool takes `FastLane`. This wrapper, in front of `FastLane`, is
the plain path of the modern era: the call goes to the upstream on the upstream session the general path would
use (a warm one for an anonymous caller), and the answer is the one the SDK's path gives (`PlainPath.modern_answer`:
the version's result shape, the `serverInfo` stamp), written as the SDK writes it: a JSON body when the call ends
within 15 seconds, else an SSE stream kept alive by pings until the answer comes.

On this lane (everything the gateway owes the call still happens):

* a POST to `/mcp` without `mcp-session-id` whose `MCP-Protocol-Version` is a modern version, carrying one
  `tools/call` request that the SDK's checks pass (the envelope in `_meta`, the routing headers, `Mcp-Param-*`
  headers against the tool's input schema, `Accept`, Host and Origin), whose `params` are only `name`,
  `arguments` and `_meta`, the `_meta` only the envelope's keys (no session key, progress token, log level or
  trace context); for an upstream tool the extension relays, when the server says the call may take the plain
  path (`CallPipeline`, asked with the capabilities the client declared: a client that declared elicitation,
  sampling or an extension is served on the general path, which holds an upstream call that asks it something);
* the caller's identity as the general path resolves it (`sessionless_call_identity`), the era and what it declared
  remembered for its upstream sessions (`DownstreamEras`), an anonymous call's own session ended with the call
  (its warm upstream session given back);
* the upstream's `InputRequiredResult` (to a modern upstream session the call declares the client's capabilities,
  not the gateway's), answered with its `requestState` sealed as the general path seals it, so that the client's
  next round, which carries it, is served there; a push question from a handshake-era upstream refused as the
  general path refuses a client that did not declare it;
* the request log and metrics, the upstream call's span, `active_calls`, a refusal by a cap (its JSON-RPC error,
  with its HTTP status), the client closing the request (the call is cancelled: cancellation on this era's wire),
  a stopping server.

Everything else goes on to `FastLane`, and so to the SDK, unchanged.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, cast

import anyio
from mcp import MCPError, types
from mcp.server.transport_security import TransportSecurityMiddleware
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    InboundLadderRejection,
    classify_inbound_request,
    find_duplicated_routing_header,
    validate_mcp_param_headers,
)
from mcp.types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.errors import ServiceNotConfiguredError
from gateway.hub.era import DownstreamEras
from gateway.hub.forwarding._call_stream import dump
from gateway.hub.forwarding.fast_lane import REQUEST_CANCELLED
from gateway.server.client_features import CallFeatures
from gateway.server.http.lane import LaneSeam, PlainPath
from gateway.server.identity import CallIdentity, sessionless_call_identity
from gateway.server.observe.observation import error_outcome
from gateway.server.round_state import RoundState
from gateway.server.running_calls import RunningCalls
from gateway.server.tool_call import error_result
from gateway.tools import ToolContext

__all__ = ["ModernLane"]

logger = logging.getLogger(__name__)

_ENVELOPE: Final = frozenset(
    {
        "io.modelcontextprotocol/protocolVersion",
        "io.modelcontextprotocol/clientInfo",
        "io.modelcontextprotocol/clientCapabilities",
    }
)
"""The `_meta` keys of a modern request's envelope; any other key is for the general path."""
_KEEP_ALIVE: Final = 15.0
"""Seconds a silent call is answered within as plain JSON, then between SSE pings (as the SDK's modern handler)."""
_SSE_HEADERS: Final = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"connection", b"keep-alive"),
    (b"x-accel-buffering", b"no"),
]

RequestId = str | int
Invoke = Callable[[dict[str, Any], ToolContext], Awaitable[dict[str, Any]]]
ClientCan = Callable[[types.ClientCapabilities], bool]


@dataclass(frozen=True, slots=True)
class _Call:
    """One eligible request: its id, the tool, the arguments, the protocol version and what the client declared."""

    request_id: RequestId
    name: str
    arguments: dict[str, Any]
    version: str
    declared: dict[str, Any]
    """As the request's `_meta` declared them (the wire form), for the upstream."""
    capabilities: types.ClientCapabilities


class _Unasked(CallFeatures):
    """The client features of a plain-path modern call: no channel mid-call (`client_can` says what was declared)."""

    def __init__(self, client_can: ClientCan) -> None:
        super().__init__(None)
        self._client_can = client_can

    def _declares(self, capability: types.ClientCapabilities) -> bool:
        return self._client_can(capability)

    async def _progress(self, progress: float, total: float | None, message: str | None) -> None:
        del progress, total, message  # no progress token was sent

    async def _log(self, level: types.LoggingLevel, data: Any, logger: str | None) -> None:
        del level, data, logger  # no log level was asked for

    async def _ask_for(self, kind: str, request: types.ElicitRequest | types.CreateMessageRequest) -> Any:
        # Unreached: nothing is asked of a client that declared nothing to be asked (`_declares`).
        raise ServiceNotConfiguredError(f"The client cannot be asked ({kind}) in the middle of this call.")


class _Response:
    """The call's HTTP response: JSON once the answer is ready, or SSE pings first when the call is silent long."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._lock = anyio.Lock()
        self.streaming = False

    async def keep_alive(self) -> None:
        """After `_KEEP_ALIVE` seconds without an answer, commit SSE and ping (cancelled once the answer is ready)."""
        while True:
            await anyio.sleep(_KEEP_ALIVE)
            async with self._lock:
                if not self.streaming:
                    await self._send({"type": "http.response.start", "status": 200, "headers": _SSE_HEADERS})
                    self.streaming = True
                await self._send({"type": "http.response.body", "body": b": ping\r\n\r\n", "more_body": True})

    async def answer(self, message: dict[str, Any]) -> None:
        body = json.dumps(message, separators=(",", ":"))
        async with self._lock:
            if self.streaming:
                event = f"event: message\r\ndata: {body}\r\n\r\n".encode()
                await self._send({"type": "http.response.body", "body": event, "more_body": False})
                return
            error: Any = message.get("error")
            code = cast("dict[str, Any]", error).get("code") if isinstance(error, dict) else None
            status = ERROR_CODE_HTTP_STATUS.get(code, 200) if isinstance(code, int) else 200
            content = body.encode()
            headers = [(b"content-length", str(len(content)).encode()), (b"content-type", b"application/json")]
            await self._send({"type": "http.response.start", "status": status, "headers": headers})
            await self._send({"type": "http.response.body", "body": content})


class ModernLane:
    """ASGI wrapper answering eligible modern `tools/call` requests itself; everything else goes to `inner`.

    Args:
        seam: what the HTTP front lends (`gateway.server.http.lane`).
        eras: the hub's record of each downstream session's era and declared capabilities.
        inner: where everything else goes (`FastLane`, in front of the SDK's streamable HTTP app).
    """

    def __init__(self, seam: LaneSeam, eras: DownstreamEras, inner: ASGIApp) -> None:
        self._inner = inner
        self._server: PlainPath = seam.server
        self._message = seam.message
        self._host_check: TransportSecurityMiddleware = seam.host_check
        self._eras = eras

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self._inner(scope, receive, send)
            return
        headers = Headers(scope=scope)
        version = headers.get("mcp-protocol-version")
        call = None
        if version in MODERN_PROTOCOL_VERSIONS and "mcp-session-id" not in headers:
            call = await self._eligible(headers, scope, version)
        if call is None:
            await self._inner(scope, receive, send)
            return
        started = time.perf_counter()
        identity = sessionless_call_identity()
        owner = identity.session_owner
        async with self._server.call_session(identity):
            # Before the tool is looked up: the upstream sessions serving this caller mirror its era and capabilities.
            self._eras.seen(owner, call.version, call.capabilities)
            relayed = await self._server.relayed_call(call.name, identity, declared=call.declared)
            if relayed is None and identity.call_scoped:
                self._eras.forget(owner)
            if relayed is not None:
                entry, tool, _log_level = relayed
                refused = validate_mcp_param_headers(entry.mcp_tool.input_schema, call.arguments, headers)
                if refused is not None:
                    # As the SDK refuses `Mcp-Param-*` headers that contradict the arguments, before the server.
                    error = {"code": refused.code, "message": refused.message, "data": refused.data}
                    error = {key: value for key, value in error.items() if value is not None}
                    await _Response(send).answer({"jsonrpc": "2.0", "id": call.request_id, "error": error})
                    return
                tool_name = (entry.tool.name, entry.upstream or "")
                await self._relay(call, identity, tool.invoke, tool.client_can, tool_name, receive, send, started)
                return
        # Not the plain path's: the general path serves it (the call's own session here has ended unused).
        await self._inner(scope, receive, send)

    async def _eligible(self, headers: Headers, scope: Scope, version: str) -> _Call | None:
        """The call, if the request is one this lane answers as the SDK would; else None."""
        message = self._message(scope)
        if message is None or message.get("jsonrpc") != "2.0" or message.get("method") != "tools/call":
            return None
        request_id: Any = message.get("id")
        params: Any = message.get("params")
        if isinstance(request_id, bool) or not isinstance(request_id, str | int) or not isinstance(params, dict):
            return None
        fields = cast("dict[str, Any]", params)
        name, arguments, meta = fields.get("name"), fields.get("arguments", {}), fields.get("_meta")
        if (
            not set(fields) <= {"name", "arguments", "_meta"}
            or not isinstance(name, str)
            or not isinstance(arguments, dict)
            or not isinstance(meta, dict)
            or not _ENVELOPE.issuperset(cast("dict[str, Any]", meta))
        ):
            return None
        declared: Any = cast("dict[str, Any]", meta).get("io.modelcontextprotocol/clientCapabilities")
        if not isinstance(declared, dict):
            return None
        verdict = classify_inbound_request(message, headers=dict(headers))
        if isinstance(verdict, InboundLadderRejection) or find_duplicated_routing_header(_scope_headers(scope)):
            return None  # the SDK answers the refusal
        accept = headers.get("accept", "")
        if "application/json" not in accept or "text/event-stream" not in accept:
            return None
        if await self._host_check.validate_request(Request(scope), is_post=True) is not None:
            return None
        try:
            capabilities = types.ClientCapabilities.model_validate(declared, by_name=False)
        except ValidationError:
            return None  # the SDK answers what it makes of them
        arguments = cast("dict[str, Any]", arguments)
        return _Call(request_id, name, arguments, version, cast("dict[str, Any]", declared), capabilities)

    async def _relay(  # noqa: PLR0917 - private, called once
        self,
        call: _Call,
        identity: CallIdentity,
        invoke: Invoke,
        client_can: ClientCan,
        tool_name: tuple[str, str],
        receive: Receive,
        send: Send,
        started: float,
    ) -> None:
        response = _Response(send)
        answer: dict[str, Any] = {"jsonrpc": "2.0", "id": call.request_id}
        server = self._server
        if server.refusing_calls:
            # The stop began after `StoppingGuard` let this POST in: refused as `running_call` would.
            await response.answer({**answer, "error": dump(RunningCalls.refused_error().error)})
            return
        context = ToolContext(
            function_call_id=f"mcp-{call.request_id}",
            client=_Unasked(client_can),
            app_name=server.name,
            user_id=identity.principal,
            session_id=identity.session_key,
        )
        scope = anyio.CancelScope()
        left = [False]
        with server.running_call(scope), server.observation.relayed("tools/call", call.name, started=started) as record:
            record.session_owner = identity.session_owner
            record.tool, record.upstream = tool_name
            async with anyio.create_task_group() as watchers:
                watchers.start_soon(_closed, receive, scope, left)
                watchers.start_soon(response.keep_alive)
                try:
                    with scope:
                        result = await invoke(call.arguments, context)
                        if result.get("resultType") == "input_required":
                            # The next round goes to the general path, which relays it to the upstream's state.
                            sent: Any = result.get("requestState")
                            upstream = sent if isinstance(sent, str) else None
                            state = RoundState(session=identity, relayed=True, upstream=upstream)
                            result = {**result, "requestState": state.dump()}
                        shaped = await server.modern_answer(call.version, call.name, call.arguments, result)
                        answer["result"] = shaped
                        record.outcome = _outcome(shaped)
                except MCPError as exc:
                    # The upstream's JSON-RPC error (or a cap's refusal), passed on as the general path does.
                    answer["error"] = dump(exc.error)
                    record.error_code, record.outcome = exc.error.code, error_outcome(exc.error.code)
                except Exception as exc:  # the general path's boundary too: the model reads an isError result
                    logger.exception("Tool %s raised", call.name)
                    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                    answer["result"] = await server.modern_answer(
                        call.version, call.name, call.arguments, dump(error_result(text))
                    )
                    record.outcome = "tool_error"
                if scope.cancelled_caught:
                    record.outcome = "cancelled"
                    answer.pop("result", None)
                    error = {"code": REQUEST_CANCELLED, "message": server.stop_reason or "Request cancelled"}
                    answer["error"] = error
                    record.error_code = REQUEST_CANCELLED
                watchers.cancel_scope.cancel()
        if not left[0]:  # a client that closed the request reads no answer
            await response.answer(answer)


def _outcome(result: dict[str, Any]) -> str:
    if result.get("isError") is True:
        return "tool_error"
    return "input_required" if result.get("resultType") == "input_required" else "ok"


def _scope_headers(scope: Scope) -> list[tuple[str, str]]:
    """The request's headers as sent, duplicates kept (the SDK refuses a routing header sent twice)."""
    return [(key.decode("latin-1"), value.decode("latin-1")) for key, value in scope["headers"]]


async def _closed(receive: Receive, scope: anyio.CancelScope, left: list[bool]) -> None:
    """Cancel the call when its client closes the request (cancellation, on this era's wire)."""
    while (await receive())["type"] != "http.disconnect":
        pass
    left[0] = True
    scope.cancel()
