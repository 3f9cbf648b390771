"""The one place that builds `httpx2` clients: for upstream MCP servers, token endpoints and authorization servers.

Below both rooms, so the server's requests (to its authorization server, to the token endpoints of its sign-ins)
and the client's share one builder, and catch the same `REQUEST_FAILED`, without the server importing the client.

Connections are kept for the next request. The SDK's streamable HTTP transport closes a request's SSE response as
soon as the JSON-RPC response arrived, a moment before the server ends the stream; httpcore then cannot tell the
connection is clean and drops it, so every call of a handshake-era session would open a new TCP connection (and
resolve the host in a worker thread). `_DrainingTransport` reads such a POST stream to its end first (bounded), so
the connection goes back to the pool.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Final

import anyio
import httpx2

__all__ = ["REQUEST_FAILED", "ResponseHook", "http_client"]

REQUEST_FAILED: Final[tuple[type[Exception], ...]] = (httpx2.HTTPError, httpx2.InvalidURL)
"""What an httpx2 request raises when it could not be made or completed: catch this, not `httpx2.HTTPError` alone.

`httpx2.InvalidURL` is no `HTTPError`, so a malformed URL taken from someone else's metadata or config (a token
endpoint, a JWKS URI) would otherwise escape as a crash instead of failing like an unreachable server.
"""

ResponseHook = Callable[[httpx2.Response], Awaitable[None]]
"""Called with every response (its body unread), e.g. to notice a 404 for a forgotten session."""


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """The TLS settings every upstream client shares: loading the CA store once, not per session (~40 ms each).

    Built on the first https request only: the CA store costs about 1 MiB of the process's memory, which a gateway
    whose upstreams are all plain http on loopback or stdio never needs.
    """
    return httpx2.create_ssl_context()


@functools.cache
def _plain_context() -> ssl.SSLContext:
    """The context of the transport that carries plain http only; it never makes a TLS connection.

    `AsyncHTTPTransport` wants a context when it is built. This one trusts no certificate at all, so if an https
    request ever reached it, verification would fail instead of passing unchecked.
    """
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


_DRAIN_SECONDS: Final = 1.0
"""How long closing a POST's SSE response may wait for the server to end it (the caller already has its answer)."""
_DRAIN_BYTES: Final = 64 * 1024
"""How much of the rest of such a stream is read at most; past it the connection is dropped instead."""


class _DrainedStream(httpx2.AsyncByteStream):
    """A response body that, closed early, reads the rest (bounded) so its connection can be reused."""

    def __init__(self, inner: httpx2.AsyncByteStream) -> None:
        self._inner = inner
        self._ended = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            yield chunk
        self._ended = True

    async def aclose(self) -> None:
        try:
            if not self._ended:
                left = _DRAIN_BYTES
                with anyio.move_on_after(_DRAIN_SECONDS):
                    async for chunk in self._inner:
                        left -= len(chunk)
                        if left < 0:
                            break
        except httpx2.HTTPError:
            pass  # the connection is dropped, as it would have been without draining
        finally:
            await self._inner.aclose()


class _SchemeTransport(httpx2.AsyncBaseTransport):
    """Plain http on one connection pool, https on another whose TLS context is built on the first https request."""

    def __init__(self) -> None:
        self._plain = httpx2.AsyncHTTPTransport(verify=_plain_context())
        self._tls: httpx2.AsyncHTTPTransport | None = None

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.url.scheme != "https":
            return await self._plain.handle_async_request(request)
        if self._tls is None:
            self._tls = httpx2.AsyncHTTPTransport(verify=_tls_context())
        return await self._tls.handle_async_request(request)

    async def aclose(self) -> None:
        await self._plain.aclose()
        if self._tls is not None:
            await self._tls.aclose()


class _DrainingTransport(httpx2.AsyncBaseTransport):
    """`AsyncHTTPTransport` whose POST responses streamed as SSE are drained when closed early."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        # Only a request's own stream ends after its response; neither the GET stream of a session nor a modern
        # `subscriptions/listen` stream ends by itself.
        if (
            request.method == "POST"
            and request.headers.get("mcp-method") != "subscriptions/listen"
            and response.headers.get("content-type", "").startswith("text/event-stream")
        ):
            stream = response.stream
            if isinstance(stream, httpx2.AsyncByteStream):
                response.stream = _DrainedStream(stream)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def http_client(
    *,
    headers: dict[str, str] | None,
    connect_timeout: float,
    read_timeout: float | None,
    auth: httpx2.Auth | None = None,
    on_response: ResponseHook | None = None,
    factory: Callable[..., object] | None = None,
) -> httpx2.AsyncClient:
    """An HTTP client that follows no redirects: for one upstream session, or one OAuth endpoint.

    `read_timeout` bounds the wait for the next bytes of a response stream, so it must exceed the longest quiet
    spell of a tool call (servers stream progress, but need not). `factory`: a user's `httpx_client_factory`
    (google-adk's hook), called as ADK calls it, builds the client instead.

    Raises:
        TypeError: the factory returned something other than an `httpx2.AsyncClient` (an `httpx` 0.x client, say).
    """
    timeout = httpx2.Timeout(connect_timeout, read=read_timeout)
    if factory is not None:
        return _client_from_factory(factory, headers=headers, timeout=timeout, auth=auth, on_response=on_response)
    hooks: dict[str, list[ResponseHook]] = {"response": [on_response]} if on_response else {}
    return httpx2.AsyncClient(
        headers=headers,
        timeout=timeout,
        auth=auth,
        follow_redirects=False,
        event_hooks=hooks,
        transport=_DrainingTransport(_SchemeTransport()),
    )


def _client_from_factory(
    factory: Callable[..., object],
    *,
    headers: dict[str, str] | None,
    timeout: httpx2.Timeout,
    auth: httpx2.Auth | None,
    on_response: ResponseHook | None,
) -> httpx2.AsyncClient:
    client = factory(headers=headers, timeout=timeout, auth=auth)
    if not isinstance(client, httpx2.AsyncClient):
        kind = f"{type(client).__module__}.{type(client).__qualname__}"
        raise TypeError(
            f"httpx_client_factory returned a {kind}, but the MCP SDK 2.x transports take only an "
            "httpx2.AsyncClient (httpx2 is httpx's successor, and an httpx 0.x client cannot carry their traffic). "
            "Build the client with `httpx2.AsyncClient(headers=headers, timeout=timeout, auth=auth, ...)`, "
            "or leave httpx_client_factory out"
        )
    if on_response is not None:
        # The session pool learns from every response (a 404 for a forgotten session), whoever built the client.
        hooks = client.event_hooks
        client.event_hooks = {**hooks, "response": [*hooks.get("response", []), on_response]}
    return client
