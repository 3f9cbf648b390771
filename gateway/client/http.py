"""The one place that builds `httpx2` clients for upstream MCP servers."""

from __future__ import annotations

import functools
import ssl
from collections.abc import Awaitable, Callable

import httpx2

__all__ = ["ResponseHook", "http_client"]

ResponseHook = Callable[[httpx2.Response], Awaitable[None]]
"""Called with every response (its body unread), e.g. to notice a 404 for a forgotten session."""


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """The TLS settings every upstream client shares: loading the CA store once, not per session (~40 ms each)."""
    return httpx2.create_ssl_context()


def http_client(
    *,
    headers: dict[str, str] | None,
    connect_timeout: float,
    read_timeout: float | None,
    auth: httpx2.Auth | None = None,
    on_response: ResponseHook | None = None,
) -> httpx2.AsyncClient:
    """An HTTP client for one upstream session.

    `read_timeout` bounds the wait for the next bytes of a response stream, so it must exceed the longest quiet
    spell of a tool call (servers stream progress, but need not).
    """
    timeout = httpx2.Timeout(connect_timeout, read=read_timeout)
    hooks: dict[str, list[ResponseHook]] = {"response": [on_response]} if on_response else {}
    return httpx2.AsyncClient(
        headers=headers,
        timeout=timeout,
        auth=auth,
        follow_redirects=False,
        event_hooks=hooks,
        verify=_tls_context(),
    )
