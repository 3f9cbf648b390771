"""How to reach an upstream MCP server: stdio, SSE or streamable HTTP, each with its own timeouts and auth."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import httpx2
from pydantic import BaseModel, ConfigDict, Field, PositiveFloat

__all__ = ["ConnectionParams", "SseConnectionParams", "StdioConnectionParams", "StreamableHTTPConnectionParams"]


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, frozen=True)

    connect_timeout: PositiveFloat = 30.0
    """Seconds allowed for starting the transport and the MCP handshake (not for tool calls)."""
    call_timeout: PositiveFloat | None = 300.0
    """Seconds one request (a tool call, a listing) may take; None for no limit."""


class StdioConnectionParams(_Params):
    """An MCP server started as a child process speaking MCP on its stdin/stdout.

    The child runs in its own process group, which is killed when the session ends.
    """

    command: str
    args: list[str] = Field(default_factory=list[str])
    env: dict[str, str] | None = None
    """Extra environment variables (added to a minimal safe environment, as the MCP SDK does)."""
    cwd: str | Path | None = None
    log_name: str | None = None
    """The name the child's stderr lines are logged under, as `[name] line` (default: the command's file name)."""

    def describe(self) -> str:
        """A short name for messages."""
        return " ".join([self.command, *self.args])


class _HttpParams(_Params):
    url: str
    headers: dict[str, str] | None = None
    bearer_token: str | None = None
    """Sent as `Authorization: Bearer <token>`."""
    auth: Any | None = None
    """An `httpx2.Auth`, e.g. the MCP SDK's `OAuthClientProvider`."""

    def describe(self) -> str:
        """A short name for messages: the URL without credentials or query values (which may hold secrets)."""
        parts = urlsplit(self.url)
        netloc = parts.netloc.rpartition("@")[2]
        query = "&".join(f"{name}=..." for name, _ in parse_qsl(parts.query, keep_blank_values=True))
        return urlunsplit((parts.scheme, netloc, parts.path, query, ""))

    def http_headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """Static headers, the bearer token, then per-identity headers; a later name replaces an earlier one
        whatever its case."""
        headers: dict[str, str] = {}
        layers = [self.headers or {}, {"Authorization": f"Bearer {self.bearer_token}"} if self.bearer_token else {}]
        for layer in [*layers, extra or {}]:
            for name, value in layer.items():
                for existing in [key for key in headers if key.lower() == name.lower()]:
                    del headers[existing]
                headers[name] = value
        return headers

    def httpx_auth(self) -> httpx2.Auth | None:
        """The configured `httpx2.Auth`, checked."""
        if self.auth is not None and not isinstance(self.auth, httpx2.Auth):
            raise TypeError(f"auth must be an httpx2.Auth, got {type(self.auth).__name__}")
        return self.auth


class SseConnectionParams(_HttpParams):
    """An MCP server reached over the legacy HTTP+SSE transport (`GET /sse`)."""

    sse_read_timeout: PositiveFloat = 300.0
    """Seconds without any event before the SSE stream counts as dead."""


class StreamableHTTPConnectionParams(_HttpParams):
    """An MCP server reached over streamable HTTP (`POST /mcp`)."""

    terminate_on_close: bool = True
    """Send `DELETE` to end the server's session when the connection closes."""


ConnectionParams = StdioConnectionParams | SseConnectionParams | StreamableHTTPConnectionParams
