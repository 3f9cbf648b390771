"""`RefusalStatus`: HTTP 429 for a streamable HTTP request refused by a cap, where the transport allows.

A request refused because a cap on upstream sessions or held calls is reached (`mcpServers.KEY.maxSessions`,
`maxSessionsPerClient`, `maxHeldCalls`, `maxHeldCallsPerClient`) is answered with a JSON-RPC error: code -32000,
`data.limit` naming the cap, `data.retryable` true. Where that error is the whole HTTP response (plain JSON: a
2026-07-28 request answered before its stream was committed, or a server in JSON-response mode), the status says
so too: 429 with `Retry-After`, the JSON-RPC error as the body, so that HTTP clients, proxies and load balancers
back off. An answer already committed to an SSE stream keeps its 200 (its status left before the refusal was
known), and so do stdio and SSE connections: the JSON-RPC error is the answer there.
"""

from __future__ import annotations

import json
from typing import Any, Final, cast

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["REFUSAL_RETRY_AFTER", "RefusalStatus"]

REFUSAL_RETRY_AFTER: Final = 1
"""Seconds a refused client waits before trying again (a cap frees up when a call ends, usually within seconds)."""
_REFUSAL_CODE: Final = -32000
_LARGEST_REFUSAL: Final = 4096
"""Bytes: a refusal's JSON is short; a longer body is an answer, passed on unread."""


class RefusalStatus:
    """Wraps the streamable HTTP app: a plain JSON answer that is a cap's refusal gets status 429."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self._app(scope, receive, send)
            return
        held: list[Message] = []

        async def watch(message: Message) -> None:
            if held:
                start = held.pop()
                if message["type"] == "http.response.body" and not message.get("more_body", False):
                    start = _as_refusal(start, message.get("body", b""))
                await send(start)
            elif message["type"] == "http.response.start" and _plain_json(message):
                held.append(message)  # until the body shows what it is
                return
            await send(message)

        await self._app(scope, receive, watch)
        if held:
            await send(held.pop())


def _plain_json(start: Message) -> bool:
    headers = Headers(raw=start.get("headers", []))
    length = headers.get("content-length")
    return (
        start["status"] == 200
        and headers.get("content-type", "").startswith("application/json")
        and length is not None
        and length.isdigit()
        and int(length) <= _LARGEST_REFUSAL
    )


def _as_refusal(start: Message, body: bytes) -> Message:
    """`start` with status 429 and `Retry-After` when `body` is a cap's refusal; else `start` as it is."""
    if b'"error"' not in body:
        return start
    try:
        message: Any = json.loads(body)
    except ValueError:
        return start
    error = _field(message, "error")
    data = _field(error, "data")
    refusal = (
        _field(error, "code") == _REFUSAL_CODE
        and isinstance(_field(data, "limit"), str)
        and _field(data, "retryable") is True
    )
    if not refusal:
        return start
    refused = dict(start)
    refused["status"] = 429
    headers = MutableHeaders(raw=list(start.get("headers", [])))
    headers["retry-after"] = str(REFUSAL_RETRY_AFTER)
    refused["headers"] = headers.raw
    return refused


def _field(value: Any, name: str) -> Any:
    """`value[name]` when `value` is a JSON object, else None."""
    return cast("dict[str, Any]", value).get(name) if isinstance(value, dict) else None
