"""`DirectPost`: a handshake-era `tools/call` POSTed by the hub itself on an HTTP upstream session's connections.

For a call whose result it forwards as sent, a gateway needs none of what the SDK's client transport does per
request: a request model built and dumped, a task and two memory streams per message, an OpenTelemetry span, every
incoming message validated against the JSON-RPC union, the result routed through the session's dispatcher. Here the
request is one POST on the session's own `httpx2` client (its connection pool, headers and auth), with the session's
`Mcp-Session-Id` and negotiated `Mcp-Protocol-Version`, and the answer is read from the response as the SDK reads it:
a JSON body, or an SSE stream (resumed with `Last-Event-ID` when the server gave event ids and the stream broke).

The wire is the SDK's: the request id is the progress token; what the upstream says on the call's stream before
its answer is handled as the SDK's `ClientSession` handles it — progress to the call, log messages and list changes
to the session's callbacks and message handler, `elicitation/create`, `sampling/createMessage`, `roots/list` and
`ping` answered (through the same callbacks) in a POST of their own; a call abandoned by its caller or its deadline
is cancelled upstream with `notifications/cancelled`. Failures carry the SDK's codes and texts, so the gateway
words them the same on both paths.
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, cast

import anyio
import anyio.abc
import httpx2
from mcp import MCPError, types
from pydantic import ValidationError

from gateway._http_clients import REQUEST_FAILED
from gateway._strict_json import parse_strict_json
from gateway.client.sessions.http_channel import HttpChannel, IncomingHandlers

__all__ = ["DirectPost"]

logger = logging.getLogger(__name__)

_SESSION_HEADER: Final = "mcp-session-id"
_VERSION_HEADER: Final = "mcp-protocol-version"
_LAST_EVENT_HEADER: Final = "last-event-id"
_JSON: Final = "application/json"
_SSE: Final = "text/event-stream"
_MAX_SSE_EVENT: Final = 64 * 1024 * 1024
"""As the gateway's SDK transport is set up: a gateway passes what its upstreams send."""
_RESUME_ATTEMPTS: Final = 2
_DEFAULT_RETRY_MS: Final = 1000
_MAX_RETRY_MS: Final = 10_000
"""The longest wait before resuming a stream, whatever `retry:` the upstream sent (it must not park a call)."""
_ANSWER_DEADLINE: Final = 10.0
"""Seconds a POST answering the upstream (a request's result, a courtesy cancel) may take."""
_HTTP_ERROR: Final = 400
_HTTP_NOT_FOUND: Final = 404
_HTTP_ACCEPTED: Final = 202

Progress = Callable[[float, float | None, str | None], Awaitable[None]]
_ids: Final = itertools.count()
"""The ids of the calls POSTed here (`gateway-N`): unique in the process, so on every upstream session."""


@dataclass(frozen=True)
class DirectPost:
    """Calls POSTed on the HTTP side of one handshake-era upstream session, as the client side keeps it.

    Args:
        channel: the session's `httpx2` client, endpoint and `Mcp-Session-Id` (`UpstreamSession.channel`).
    """

    channel: HttpChannel

    @property
    def client(self) -> httpx2.AsyncClient:
        return self.channel.client

    @property
    def url(self) -> str:
        return self.channel.url

    @property
    def session_id(self) -> str | None:
        return self.channel.session_id

    def close_later(self, response: httpx2.Response) -> None:
        """Close a call's response after the call returned: the server ends its stream a moment after the answer,
        and reading that end (so the connection is reused) need not delay the caller."""
        closer = self.channel.closer
        assert closer is not None, "HttpChannel.closer is set before the session is published"
        closer.start_soon(_close, response)

    def _headers(self, protocol_version: str) -> dict[str, str]:
        headers = {"accept": f"{_JSON}, {_SSE}", "content-type": _JSON, _VERSION_HEADER: protocol_version}
        if self.session_id is not None:
            headers[_SESSION_HEADER] = self.session_id
        return headers

    async def call_tool(
        self,
        params: dict[str, Any],
        *,
        protocol_version: str,
        handlers: IncomingHandlers,
        on_progress: Progress,
        read_timeout: float | None,
    ) -> dict[str, Any]:
        """POST `tools/call` with `params`; the result object the upstream answered.

        Raises:
            MCPError: the upstream's JSON-RPC error; `CONNECTION_CLOSED` when the connection failed or the stream
                ended without an answer; `REQUEST_TIMEOUT` after `read_timeout` seconds (the call is cancelled
                upstream); `INVALID_REQUEST` for a forgotten session (HTTP 404) or an answer that is not one.
        """
        request_id = f"gateway-{next(_ids)}"
        meta = dict(cast("dict[str, Any]", params.get("_meta") or {}))
        meta["progressToken"] = request_id
        body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {**params, "_meta": meta}}
        headers = self._headers(protocol_version)
        exchange = _Exchange(self, request_id, headers, handlers, on_progress)
        outcome: dict[str, Any] | MCPError = {}
        try:
            with anyio.fail_after(read_timeout):
                async with anyio.create_task_group() as answers:
                    exchange.answers = answers
                    try:
                        outcome = await exchange.run(json.dumps(body, separators=(",", ":")).encode())
                    except MCPError as exc:  # raised here, not out of the task group (which would wrap it)
                        outcome = exc
                    answers.cancel_scope.cancel()  # nothing the upstream asked outlives its call
        except TimeoutError:
            await self._cancel(request_id, headers, f"timed out after {read_timeout}s")
            raise MCPError(code=types.REQUEST_TIMEOUT, message="Request 'tools/call' timed out") from None
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self._cancel(request_id, headers, "caller cancelled")
            raise
        if isinstance(outcome, MCPError):
            raise outcome
        if "error" in outcome:
            error = types.ErrorData.model_validate(outcome["error"])
            raise MCPError(code=error.code, message=error.message, data=error.data)
        result = outcome.get("result")
        if not isinstance(result, dict):
            raise MCPError(code=types.INVALID_REQUEST, message="The upstream's answer holds no result object.")
        return cast("dict[str, Any]", result)

    async def _cancel(self, request_id: str, headers: dict[str, str], reason: str) -> None:
        """The courtesy `notifications/cancelled` for an abandoned call (bounded; a failure only logged)."""
        message = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": reason},
        }
        await self.post_message(message, headers)

    async def post_message(self, message: dict[str, Any], headers: dict[str, str]) -> None:
        """POST a notification or a response to the upstream (bounded; a failure only logged)."""
        with anyio.move_on_after(_ANSWER_DEADLINE):
            try:
                response = await self.client.post(self.url, json=message, headers=headers)
                await response.aclose()
            except REQUEST_FAILED as exc:
                logger.debug("Posting %s to %s failed: %s", message.get("method", "a response"), self.url, exc)


async def _close(response: httpx2.Response) -> None:
    try:
        await response.aclose()
    except httpx2.HTTPError as exc:  # the connection is dropped; the call already has its answer
        logger.debug("Closing a call's response failed: %s", exc)


@dataclass(eq=False)
class _Exchange:
    """One call's POST and what arrives on its stream until the answer."""

    post: DirectPost
    request_id: str
    headers: dict[str, str]
    handlers: IncomingHandlers
    on_progress: Progress
    answers: anyio.abc.TaskGroup | None = None
    last_event_id: str | None = None
    retry_ms: int = _DEFAULT_RETRY_MS

    async def run(self, body: bytes) -> dict[str, Any]:
        """The answer (a JSON-RPC response or error object) to the POSTed `body`."""
        client = self.post.client
        try:
            request = client.build_request("POST", self.post.url, content=body, headers=self.headers)
            response = await client.send(request, stream=True)
            try:
                answer = await self._read(response)
            except BaseException:
                with anyio.CancelScope(shield=True), anyio.move_on_after(_ANSWER_DEADLINE):
                    await response.aclose()
                raise
            self.post.close_later(response)
            for _ in range(_RESUME_ATTEMPTS):
                if answer is not None or self.last_event_id is None:
                    break
                await anyio.sleep(self.retry_ms / 1000)
                headers = {**self.headers, _LAST_EVENT_HEADER: self.last_event_id}
                async with client.stream("GET", self.post.url, headers=headers) as response:
                    answer = await self._read(response) if response.status_code < _HTTP_ERROR else None
        except httpx2.TransportError as exc:
            raise MCPError(code=types.CONNECTION_CLOSED, message=f"Connection closed: {exc}") from exc
        if answer is None:
            raise MCPError(code=types.CONNECTION_CLOSED, message="SSE stream ended without a response")
        return answer

    async def _read(self, response: httpx2.Response) -> dict[str, Any] | None:
        """The answer in `response`; None when its SSE stream ended first."""
        status = response.status_code
        if status == _HTTP_ACCEPTED:
            raise MCPError(code=types.INVALID_REQUEST, message="server answered a request with 202 Accepted")
        if status >= _HTTP_ERROR:
            raise await self._refusal(response)
        if response.is_redirect:
            raise MCPError(
                code=types.INVALID_REQUEST,
                message=f"the server redirected the request to {response.headers.get('location')}; not followed",
            )
        content_type = response.headers.get("content-type", "").lower()
        if content_type.startswith(_JSON):
            return self._answer(_parsed(await response.aread(), "JSON response"))
        if not content_type.startswith(_SSE):
            raise MCPError(code=types.INVALID_REQUEST, message=f"Unexpected content type: {content_type}")
        try:
            async for event in httpx2.EventSource(response, max_event_size=_MAX_SSE_EVENT):
                if event.id:
                    self.last_event_id = event.id
                if event.retry is not None:
                    self.retry_ms = min(max(event.retry, 0), _MAX_RETRY_MS)
                if event.event != "message" or not event.data:
                    continue  # a priming event (an id for resumption), or one the protocol does not define
                answer = await self._take(_parsed(event.data, "SSE message"))
                if answer is not None:
                    return answer
        except httpx2.SSEError as exc:
            raise MCPError(code=types.CONNECTION_CLOSED, message=f"SSE stream failed: {exc}") from exc
        except httpx2.TransportError:
            logger.debug("The SSE stream of call %s ended", self.request_id, exc_info=True)
        return None

    async def _refusal(self, response: httpx2.Response) -> MCPError:
        """The error an HTTP error status stands for: the JSON-RPC error in its body, else the SDK's stand-in."""
        if response.headers.get("content-type", "").lower().startswith(_JSON):
            try:
                parsed = parse_strict_json(await response.aread())
                return MCPError.from_error_data(types.ErrorData.model_validate(parsed["error"]))
            except (ValueError, KeyError, TypeError, ValidationError, httpx2.StreamError):
                pass
        if response.status_code == _HTTP_NOT_FOUND and self.post.session_id is not None:
            return MCPError(code=types.INVALID_REQUEST, message="Session terminated")
        return MCPError(code=types.INTERNAL_ERROR, message="Server returned an error response")

    def _answer(self, message: Any) -> dict[str, Any]:
        if not isinstance(message, dict) or ("result" not in message and "error" not in message):
            raise MCPError(code=types.INVALID_REQUEST, message="The upstream's answer is not a JSON-RPC response.")
        return cast("dict[str, Any]", message)

    async def _take(self, message: Any) -> dict[str, Any] | None:
        """Handle one message of the call's stream; the answer, when it is the answer."""
        if not isinstance(message, dict):
            return None
        fields = cast("dict[str, Any]", message)
        method = fields.get("method")
        if not isinstance(method, str):
            return self._answer(fields) if fields.get("id") == self.request_id else None
        params = fields.get("params")
        if "id" in fields:
            assert self.answers is not None
            self.answers.start_soon(self._respond, fields["id"], method, params)
            return None
        await self._notified(method, params)
        return None

    async def _notified(self, method: str, params: Any) -> None:
        if method == "notifications/cancelled":
            return
        if method == "notifications/progress" and isinstance(params, dict):
            update = cast("dict[str, Any]", params)
            if update.get("progressToken") == self.request_id:
                await self.on_progress(update.get("progress", 0.0), update.get("total"), update.get("message"))
                return
        try:
            notification = types.server_notification_adapter.validate_python(
                {"method": method, "params": params} if params is not None else {"method": method}, by_name=False
            )
        except ValidationError:
            logger.warning("Ignoring an invalid %s notification from %s", method, self.post.url)
            return
        try:
            if isinstance(notification, types.LoggingMessageNotification) and self.handlers.logging is not None:
                await self.handlers.logging(notification.params)
            await self.handlers.message(notification)
        except Exception:
            logger.exception("Handling the upstream notification %s failed", method)

    async def _respond(self, request_id: Any, method: str, params: Any) -> None:
        """Answer a request the upstream made on the call's stream, in a POST of its own."""
        try:
            result = await self._result_of(method, params)
            message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "result": result}
        except MCPError as exc:
            error = exc.error.model_dump(by_alias=True, mode="json", exclude_none=True)
            message = {"jsonrpc": "2.0", "id": request_id, "error": error}
        await self.post.post_message(message, self.headers)

    async def _result_of(self, method: str, params: Any) -> dict[str, Any]:
        try:
            request = types.server_request_adapter.validate_python(
                {"method": method, "params": params} if params is not None else {"method": method}, by_name=False
            )
        except ValidationError as exc:
            if method in _ANSWERED:
                raise MCPError(code=types.INVALID_PARAMS, message=f"Invalid {method} request: {exc}") from exc
            raise MCPError(code=types.METHOD_NOT_FOUND, message="Method not found", data=method) from exc
        if isinstance(request, types.PingRequest):
            return {}
        # The SDK client's answer when the session has no callback for a request (it does not offer the feature).
        if isinstance(request, types.ElicitRequest):
            callback, arguments, unsupported = self.handlers.elicitation, (request.params,), "Elicitation"
        elif isinstance(request, types.CreateMessageRequest):
            callback, arguments, unsupported = self.handlers.sampling, (request.params,), "Sampling"
        else:  # roots/list, the last request a server may make
            callback, arguments, unsupported = self.handlers.list_roots, (), "List roots"
        response: Any = (
            await callback(None, *arguments)
            if callback is not None
            else types.ErrorData(code=types.INVALID_REQUEST, message=f"{unsupported} not supported")
        )
        if isinstance(response, types.ErrorData):
            raise MCPError.from_error_data(response)
        return cast("dict[str, Any]", response.model_dump(by_alias=True, mode="json", exclude_none=True))


def _parsed(data: str | bytes, what: str) -> Any:
    """A message's JSON, read as the gateway reads all JSON-RPC text (`gateway._strict_json`); a parse error is the
    call's error, worded as the SDK's client words it."""
    try:
        return parse_strict_json(data)
    except ValueError as exc:
        raise MCPError(code=types.PARSE_ERROR, message=f"Failed to parse {what}: {exc}") from exc


_ANSWERED: Final = frozenset({"ping", "elicitation/create", "sampling/createMessage", "roots/list"})
