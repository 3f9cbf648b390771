"""A small HTTP load balancer for tests: each request goes to the next backend in turn, streamed both ways.

`RoundRobinProxy(backends).serving()` runs it under uvicorn on a free loopback port and yields its base URL.

* Per request, not per connection: a client's keep-alive connection does not pin it to one backend, so a modern
  client's rounds really land on different replicas.
* With `affinity=True`, the proxy learns which backend created each `Mcp-Session-Id` (from the response that
  carries it) and sends that session's requests there while it is up, as HAProxy's `stick store-response
  res.hdr(mcp-session-id)` / `stick on req.hdr(mcp-session-id)` does (`examples/haproxy.cfg`); requests without
  a session id, or whose backend is down, go round-robin. (Hashing the id instead does not work: the
  `initialize` that creates a session carries no id, so the hash would not pick the backend that created it.)
* A backend that refuses the connection is marked down and the request goes to the next one (a balancer's
  health check, done on the spot); a backend that dies in the middle of a response breaks that response (502
  before the response started, a cut stream after).

`served` records which backend (its index) took each forwarded request, with the JSON-RPC method when the body
had one, for tests to assert where things ran.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx2
from starlette.types import Message, Receive, Scope, Send

from tests.support.loopback import serving_asgi

__all__ = ["Forwarded", "RoundRobinProxy"]

_HOP_BY_HOP = frozenset(
    {b"connection", b"keep-alive", b"transfer-encoding", b"te", b"trailer", b"upgrade", b"host", b"content-length"}
)


@dataclass(frozen=True)
class Forwarded:
    """One request the proxy forwarded."""

    backend: int
    method: str | None
    """The JSON-RPC method of the body, if it had one."""
    session_id: str | None
    status: int


class RoundRobinProxy:
    """See the module docstring.

    Args:
        backends: base URLs (`http://127.0.0.1:PORT`).
        affinity: route requests with `Mcp-Session-Id` by its hash among the live backends.
    """

    def __init__(self, backends: Sequence[str], *, affinity: bool = False) -> None:
        self.backends = list(backends)
        self.affinity = affinity
        self.down: set[int] = set()
        self.served: list[Forwarded] = []
        self._next = 0
        self._sessions: dict[str, int] = {}
        self._http: httpx2.AsyncClient | None = None

    def _live(self) -> list[int]:
        return [index for index in range(len(self.backends)) if index not in self.down]

    def _choose(self, session_id: str | None) -> int:
        live = self._live()
        if not live:
            raise ConnectionError("every backend is down")
        if self.affinity and session_id and self._sessions.get(session_id) in live:
            return self._sessions[session_id]
        while True:
            index = self._next % len(self.backends)
            self._next += 1
            if index not in self.down:
                return index

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        assert scope["type"] == "http"
        assert self._http is not None
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = [(name, value) for name, value in scope["headers"] if name.lower() not in _HOP_BY_HOP]
        session_id = next((v.decode() for n, v in scope["headers"] if n.lower() == b"mcp-session-id"), None)
        path = scope["path"] + (f"?{scope['query_string'].decode()}" if scope.get("query_string") else "")
        while True:
            try:
                index = self._choose(session_id)
            except ConnectionError:
                await _plain(send, 503, b"no backend is up\n")
                return
            request = self._http.build_request(
                scope["method"], self.backends[index] + path, headers=headers, content=body
            )
            try:
                response = await self._http.send(request, stream=True)
            except httpx2.ConnectError:
                self.down.add(index)
                continue
            except httpx2.TransportError:
                await _plain(send, 502, b"the backend failed\n")
                return
            break
        self.served.append(Forwarded(index, _method_of(body), session_id, response.status_code))
        created = response.headers.get("mcp-session-id")
        if created:
            self._sessions[created] = index
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": response.status_code,
                    "headers": [
                        (name.lower(), value) for name, value in response.headers.raw if name.lower() not in _HOP_BY_HOP
                    ],
                }
            )
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except httpx2.TransportError:
            # The backend died mid-response: cut the client's response too (uvicorn closes the connection).
            raise ConnectionAbortedError(f"backend {index} died in the middle of a response") from None
        finally:
            await response.aclose()

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[str]:
        """Run the proxy on a free loopback port until the block ends; yields its base URL."""
        # A fresh connection per request: a dead backend then refuses the connection (and is marked down) before
        # anything was sent, rather than failing a request on a pooled connection.
        limits = httpx2.Limits(max_connections=200, max_keepalive_connections=0)
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300), limits=limits) as http:
            self._http = http
            async with serving_asgi(self, log_level="critical") as base_url:
                yield base_url


async def _plain(send: Send, status: int, text: bytes) -> None:
    start: Message = {
        "type": "http.response.start",
        "status": status,
        "headers": [(b"content-type", b"text/plain"), (b"content-length", str(len(text)).encode())],
    }
    await send(start)
    await send({"type": "http.response.body", "body": text})


def _method_of(body: bytes) -> str | None:
    try:
        message: Any = json.loads(body)
    except ValueError:
        return None
    return message.get("method") if isinstance(message, dict) else None
