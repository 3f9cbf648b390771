"""The one place that builds `httpx2` clients for upstream MCP servers."""

from __future__ import annotations

import httpx2

__all__ = ["http_client"]


def http_client(
    *,
    headers: dict[str, str] | None,
    connect_timeout: float,
    read_timeout: float | None,
    auth: httpx2.Auth | None = None,
) -> httpx2.AsyncClient:
    """An HTTP client for one upstream session.

    `read_timeout` bounds the wait for the next bytes of a response stream, so it must exceed the longest quiet
    spell of a tool call (servers stream progress, but need not).
    """
    timeout = httpx2.Timeout(connect_timeout, read=read_timeout)
    return httpx2.AsyncClient(headers=headers, timeout=timeout, auth=auth, follow_redirects=False)
