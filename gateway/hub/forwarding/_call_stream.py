"""The stream of a call the fast lane relays (`gateway.hub.forwarding.fast_lane`), and what an upstream asks mid-call.

`CallStream` writes the call's response: an answer that comes first (nothing sent before it) as one
`application/json` body, as a server may answer any request; otherwise an SSE stream as the SDK's streamable HTTP
transport writes it (its headers in its order, `event: message` events, the HTTP response started with the first
event), the answer its last event. `StreamFeatures` is the call's
`ClientFeatures`, the server's `CallFeatures` on this wire: progress and log messages become notifications on the
stream, elicitation and sampling requests go out on it with ids of the fast lane's own (`fast-lane-N`), and
`Questions` holds them until the client's POST of the answer is routed back.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, cast

import anyio
from mcp import MCPError, types
from starlette.types import Send

from gateway.server.client_features import CallFeatures

__all__ = ["CallStream", "Questions", "RequestId", "StreamFeatures", "dump"]

RequestId = str | int
_SSE_HEADERS: Final = (
    (b"cache-control", b"no-cache, no-transform"),
    (b"connection", b"keep-alive"),
    (b"content-type", b"text/event-stream"),
)
"""The SDK's headers of a request's SSE stream, in its order (the session id and `x-accel-buffering` follow)."""


def _encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()


def _event(message: dict[str, Any]) -> bytes:
    return b"event: message\r\ndata: " + _encode(message) + b"\r\n\r\n"


def dump(model: Any) -> dict[str, Any]:
    """A protocol model in its wire form."""
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


@dataclass
class _Waiter:
    """A request sent to a client mid-call, waiting for the client's answer."""

    arrived: anyio.Event = field(default_factory=anyio.Event)
    answer: dict[str, Any] | None = None


class Questions:
    """The requests relayed calls sent their clients, by session id and request id, until answered."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._waiting: dict[tuple[str, RequestId], _Waiter] = {}

    def answer(self, session_id: str, message: dict[str, Any]) -> bool:
        """Hand a client's JSON-RPC response to the request it answers; whether there was one."""
        request_id = message.get("id")
        if not isinstance(request_id, str) or ("result" not in message and "error" not in message):
            return False
        waiter = self._waiting.get((session_id, request_id))
        if waiter is None:
            return False
        waiter.answer = message
        waiter.arrived.set()
        return True

    async def ask(self, session_id: str, stream: CallStream, request: dict[str, Any]) -> dict[str, Any]:
        """Send `request` (a JSON-RPC request without its id) on `stream`; the client's response."""
        request_id = f"fast-lane-{next(self._ids)}"
        key = (session_id, request_id)
        waiter = _Waiter()
        self._waiting[key] = waiter
        stream.asked.append(key)
        try:
            await stream.write({"jsonrpc": "2.0", "id": request_id, **request})
            await waiter.arrived.wait()
        finally:
            self._waiting.pop(key, None)
        if waiter.answer is None:
            raise MCPError(code=types.INTERNAL_ERROR, message="The call ended before the client answered.")
        return waiter.answer

    def drop(self, stream: CallStream) -> None:
        """The call of `stream` ended: what it asked and was not answered fails."""
        for key in stream.asked:
            waiter = self._waiting.pop(key, None)
            if waiter is not None:
                waiter.arrived.set()


class CallStream:
    """One relayed call's response: its answer alone as a JSON body, or events written in order on an SSE stream
    started with the first."""

    def __init__(self, send: Send, session_id: str) -> None:
        self._send = send
        self._session_header = (b"mcp-session-id", session_id.encode())
        self._headers = [*_SSE_HEADERS, self._session_header, (b"x-accel-buffering", b"no")]
        self._started = False
        self._lock = anyio.Lock()
        self.asked: list[tuple[str, RequestId]] = []
        """The requests sent to the client on this stream (`Questions`)."""

    async def write_raw(self, request_id: RequestId, result: bytes) -> None:
        """Answer at once with the response to `request_id` whose result is the JSON `result`."""
        envelope = b'{"jsonrpc":"2.0","id":' + json.dumps(request_id, ensure_ascii=False).encode() + b',"result":'
        await self._answer(envelope + result + b"}")

    async def write(self, message: dict[str, Any], *, last: bool = False) -> None:
        async with self._lock:
            if not self._started and last:
                self._started = True
                await self._answer(_encode(message))
                return
            if not self._started:
                self._started = True
                await self._send({"type": "http.response.start", "status": 200, "headers": self._headers})
            await self._send({"type": "http.response.body", "body": _event(message), "more_body": not last})

    async def _answer(self, encoded: bytes) -> None:
        """The answer alone, as one JSON body: the SDK's client closes an SSE answer a moment before its stream ends,
        which costs it the connection (a new one for every call); a body of known length it reads to the end."""
        length = (b"content-length", str(len(encoded)).encode())
        headers = [(b"content-type", b"application/json"), length, self._session_header]
        await self._send({"type": "http.response.start", "status": 200, "headers": headers})
        await self._send({"type": "http.response.body", "body": encoded, "more_body": False})


class StreamFeatures(CallFeatures):
    """`ClientFeatures` of a relayed call (`CallFeatures`): what the upstream asks mid-call, sent on the call's own
    stream."""

    def __init__(
        self,
        questions: Questions,
        stream: CallStream,
        *,
        session_id: str,
        progress_token: RequestId | None,
        log_level: types.LoggingLevel | None,
        client_can: Callable[[types.ClientCapabilities], bool],
    ) -> None:
        super().__init__(log_level)
        self._questions = questions
        self._stream = stream
        self._session_id = session_id
        self._progress_token = progress_token
        self._client_can = client_can

    def _declares(self, capability: types.ClientCapabilities) -> bool:
        return self._client_can(capability)

    async def _progress(self, progress: float, total: float | None, message: str | None) -> None:
        if self._progress_token is None:
            return
        params = types.ProgressNotificationParams(
            progress_token=self._progress_token, progress=progress, total=total, message=message
        )
        await self._stream.write(dump(types.ProgressNotification(params=params)) | {"jsonrpc": "2.0"})

    async def _log(self, level: types.LoggingLevel, data: Any, logger: str | None) -> None:
        params = types.LoggingMessageNotificationParams(level=level, data=data, logger=logger)
        await self._stream.write(dump(types.LoggingMessageNotification(params=params)) | {"jsonrpc": "2.0"})

    async def _ask_for(
        self, kind: str, request: types.ElicitRequest | types.CreateMessageRequest
    ) -> types.ElicitResult | types.CreateMessageResult:
        """Send `request` to the client on the call's stream; its result (or its error, raised as `MCPError`)."""
        del kind  # the request's id says which question an answer is for
        answer = await self._questions.ask(self._session_id, self._stream, dump(request))
        if "error" in answer:
            error = types.ErrorData.model_validate(answer["error"])
            raise MCPError(code=error.code, message=error.message, data=error.data)
        result = cast("dict[str, Any]", answer.get("result") or {})
        if isinstance(request, types.ElicitRequest):
            return types.ElicitResult.model_validate(result, by_name=False)
        return types.CreateMessageResult.model_validate(result, by_name=False)
