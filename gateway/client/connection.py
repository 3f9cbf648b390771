"""How to reach an upstream MCP server: stdio, SSE or streamable HTTP, each with its own timeouts and auth.

google-adk's shapes are accepted too: `StdioConnectionParams(server_params=StdioServerParameters(...), timeout=5)`,
`timeout=` on every kind (here the connect timeout only: ADK also makes it the limit of every stdio request, which
`call_timeout` is here), `httpx_client_factory=` on the HTTP kinds, and, through `as_connection_params`, a bare
`mcp.StdioServerParameters` or google-adk's own connection parameter objects.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, cast
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import httpx2
from mcp import StdioServerParameters
from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, field_validator, model_validator

__all__ = [
    "ConnectionParams",
    "SseConnectionParams",
    "StdioConnectionParams",
    "StreamableHTTPConnectionParams",
    "as_connection_params",
]

_SERVER_PARAMS_FIELDS = ("command", "args", "env", "cwd", "encoding", "encoding_error_handler")


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, frozen=True)

    connect_timeout: PositiveFloat = 30.0
    """Seconds allowed for starting the transport and the MCP handshake (not for tool calls)."""
    call_timeout: PositiveFloat | None = 300.0
    """Seconds one request (a tool call, a listing) may take; None for no limit."""

    @model_validator(mode="before")
    @classmethod
    def _adk_timeout(cls, data: Any) -> Any:
        """ADK's `timeout=` is the connect timeout here."""
        if isinstance(data, dict) and "timeout" in data:
            fields = dict(cast("dict[str, Any]", data))
            if "connect_timeout" in fields:
                raise ValueError("give timeout (ADK's name) or connect_timeout, not both")
            fields["connect_timeout"] = fields.pop("timeout")
            return fields
        return cast("Any", data)

    @property
    def timeout(self) -> float:
        """ADK's name for `connect_timeout`."""
        return self.connect_timeout


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
    errlog: Any | None = None
    """A file the child writes its stderr to directly (ADK's `errlog`), in place of the log; it needs a file
    descriptor (`open(path, "w")`, `sys.stderr`), since the child process writes to it, not Python."""
    encoding: str = "utf-8"
    encoding_error_handler: Literal["strict", "ignore", "replace"] = "strict"

    @model_validator(mode="before")
    @classmethod
    def _adk_server_params(cls, data: Any) -> Any:
        """ADK's shape: the command line in `server_params`, an `mcp.StdioServerParameters`."""
        if not isinstance(data, dict) or "server_params" not in data:
            return cast("Any", data)
        fields = dict(cast("dict[str, Any]", data))
        server = fields.pop("server_params")
        if not isinstance(server, StdioServerParameters):
            raise ValueError(f"server_params must be an mcp.StdioServerParameters, got {type(server).__name__}")
        given = [name for name in _SERVER_PARAMS_FIELDS if name in fields]
        if given:
            raise ValueError(
                f"give server_params (ADK's shape) or {', '.join(_SERVER_PARAMS_FIELDS[:4])}, not both "
                f"(got server_params and {', '.join(given)})"
            )
        return {**fields, **server.model_dump(include=set(_SERVER_PARAMS_FIELDS))}

    @field_validator("errlog")
    @classmethod
    def _writable_file(cls, errlog: Any) -> Any:
        if errlog is None:
            return None
        try:
            errlog.fileno()
        except (AttributeError, OSError, ValueError) as exc:
            raise ValueError(
                f"errlog must be a file with a descriptor, such as open(path, 'w') or sys.stderr: the child process "
                f"writes its stderr there itself ({type(errlog).__name__} has none: {exc})"
            ) from exc
        return errlog

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
    httpx_client_factory: Any | None = None
    """ADK's hook: called as `factory(headers=..., timeout=httpx2.Timeout, auth=...)` for each session's client,
    which must be an `httpx2.AsyncClient` (the MCP SDK 2.x transports take no other); None builds our own."""

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


def _is_adk_default_factory(factory: Any) -> bool:
    """google-adk's default `httpx_client_factory`, which only stands for "build the usual client"."""
    module = getattr(factory, "__module__", "") or ""
    return module.startswith("google.adk.") and getattr(factory, "__name__", "") == "create_mcp_http_client"


def _from_adk_object(value: Any) -> ConnectionParams | None:
    """google-adk's connection parameter objects, read field by field (so this package needs no google-adk)."""
    kind = type(value).__name__
    if kind == "StdioConnectionParams" and hasattr(value, "server_params"):
        return StdioConnectionParams.model_validate({"server_params": value.server_params, "timeout": value.timeout})
    if kind not in ("SseConnectionParams", "StreamableHTTPConnectionParams") or not hasattr(value, "url"):
        return None
    factory = getattr(value, "httpx_client_factory", None)
    fields: dict[str, Any] = {
        "url": value.url,
        "headers": value.headers,
        "timeout": value.timeout,
        "httpx_client_factory": None if _is_adk_default_factory(factory) else factory,
    }
    if kind == "SseConnectionParams":
        return SseConnectionParams(**fields, sse_read_timeout=value.sse_read_timeout)
    return StreamableHTTPConnectionParams(**fields, terminate_on_close=value.terminate_on_close)


def as_connection_params(value: object, *, errlog: Any | None = None) -> ConnectionParams:
    """`value` as our connection parameters: ours as they are, a bare `mcp.StdioServerParameters` (as google-adk's
    `McpToolset` takes it), or google-adk's `StdioConnectionParams`, `SseConnectionParams` and
    `StreamableHTTPConnectionParams`. `errlog` (ADK's `McpToolset(errlog=)`) goes to a stdio child's stderr.

    Raises:
        TypeError: `value` is none of these.
    """
    params: ConnectionParams | None
    if isinstance(value, StdioConnectionParams | SseConnectionParams | StreamableHTTPConnectionParams):
        params = value
    elif isinstance(value, StdioServerParameters):
        params = StdioConnectionParams.model_validate({"server_params": value})
    else:
        params = _from_adk_object(value)
    if params is None:
        raise TypeError(
            "connection_params must be a StdioConnectionParams, SseConnectionParams or StreamableHTTPConnectionParams "
            f"(gateway.client's or google-adk's) or an mcp.StdioServerParameters, got {type(value).__name__}"
        )
    if errlog is not None and isinstance(params, StdioConnectionParams):
        params = StdioConnectionParams.model_validate({**dict(params), "errlog": errlog})
    return params
