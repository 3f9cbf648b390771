"""How an upstream MCP server is reached: stdio, SSE or streamable HTTP, watched for the end of the connection."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, Protocol, Self

import anyio
import anyio.abc
import httpx2
from mcp import StdioServerParameters, stdio_client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from gateway._http_clients import ResponseHook, http_client
from gateway._write_check import CheckedWriteStream
from gateway.client.connection import (
    ConnectionParams,
    SseConnectionParams,
    StdioConnectionParams,
    StreamableHTTPConnectionParams,
)
from gateway.client.sessions._stderr_relay import stderr_relay

__all__ = [
    "CommandNotFoundError",
    "HttpClientHook",
    "Streams",
    "WatchedReadStream",
    "open_transport",
    "resolve_command",
]

_MAX_SSE_EVENT = 64 * 1024 * 1024


class _Receiver(Protocol):
    async def receive(self) -> Any: ...
    async def aclose(self) -> None: ...


Streams = tuple[Any, Any]
"""A transport's (read stream, write stream) pair, as the SDK's transports yield it."""


class WatchedReadStream(anyio.abc.AsyncResource):
    """A transport's read stream that reports its end, so a dead session is noticed before the next call.

    The SDK offers no public signal for a connection that ended while idle; its `ReadStream` protocol is the seam
    (and `last_context` is the attribute its consumers read from context-carrying streams).
    """

    def __init__(self, inner: _Receiver, on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


@contextlib.asynccontextmanager
async def open_transport(
    params: ConnectionParams,
    headers: dict[str, str] | None,
    *,
    on_response: ResponseHook,
    on_end: Callable[[], None],
    on_client: HttpClientHook | None = None,
) -> AsyncGenerator[Streams]:
    """The transport `params` describe, with `headers` added (HTTP), yielding (read stream, write stream).

    `on_response` sees every HTTP response; `on_end` is called once the server's side of the connection ended;
    `on_client` is told a streamable HTTP transport's `httpx2` client and endpoint. A message that cannot be
    serialised fails alone rather than ending the transport (`CheckedWriteStream`).
    """
    async with _transport(params, headers, on_response, on_client) as (read_stream, write_stream):
        yield WatchedReadStream(read_stream, on_end), CheckedWriteStream(write_stream, params.describe())


class CommandNotFoundError(FileNotFoundError):
    """A stdio upstream's bare command is neither on `PATH` nor beside the gateway's interpreter (says the fix)."""


def resolve_command(command: str, env: Mapping[str, str] | None = None) -> str:
    """The executable a stdio upstream's `command` names: a path as given, else found on `PATH`, else beside the
    gateway's own interpreter (its venv's `bin`, which a client such as Claude Desktop leaves off `PATH`).

    `PATH` is the upstream's `env` value if it sets one, else the gateway's.

    Raises:
        CommandNotFoundError: a bare command found in neither place; the message names the command, the `PATH`
            searched and the fix.
    """
    if os.sep in command or (os.altsep is not None and os.altsep in command):
        return command
    search_path = (env or {}).get("PATH", os.environ.get("PATH", os.defpath))
    found = shutil.which(command, path=search_path)
    if found is None:
        beside = Path(sys.executable).parent
        found = shutil.which(command, path=str(beside))
        if found is None:
            raise CommandNotFoundError(
                f"the command {command!r} was not found on PATH {search_path} nor beside the gateway's Python "
                f"({beside}). Give its absolute path in 'command' (`which {command}` in a shell where it works "
                f"prints it), or add its directory to PATH in the upstream's 'env'"
            )
    return found


HttpClientHook = Callable[[httpx2.AsyncClient, str], None]
"""Told a streamable HTTP transport's client and endpoint before its first request."""


def _transport(
    params: ConnectionParams, headers: dict[str, str] | None, hook: ResponseHook, on_client: HttpClientHook | None
) -> AbstractAsyncContextManager[Streams]:
    if isinstance(params, StdioConnectionParams):
        return _stdio(params)
    if isinstance(params, SseConnectionParams):

        def factory(
            headers: dict[str, str] | None = None,
            timeout: httpx2.Timeout | None = None,
            auth: httpx2.Auth | None = None,
        ) -> httpx2.AsyncClient:
            return http_client(
                headers=headers,
                connect_timeout=params.connect_timeout,
                read_timeout=timeout.read if timeout is not None else params.sse_read_timeout,
                auth=auth,
                on_response=hook,
                factory=params.httpx_client_factory,
            )

        return sse_client(
            params.url,
            headers=params.http_headers(headers),
            timeout=params.connect_timeout,
            sse_read_timeout=params.sse_read_timeout,
            httpx_client_factory=factory,
            auth=params.httpx_auth(),
        )
    return _streamable_http(params, headers, hook, on_client)


@contextlib.asynccontextmanager
async def _stdio(params: StdioConnectionParams) -> AsyncGenerator[Streams]:
    command = resolve_command(params.command, params.env)
    server = StdioServerParameters(
        command=command,
        args=params.args,
        env=params.env,
        cwd=params.cwd,
        encoding=params.encoding,
        encoding_error_handler=params.encoding_error_handler,
    )
    relay = (
        contextlib.nullcontext(params.errlog)
        if params.errlog is not None
        else stderr_relay(params.log_name or Path(params.command).name)
    )
    async with relay as errlog, stdio_client(server, errlog=errlog) as streams:
        yield streams


@contextlib.asynccontextmanager
async def _streamable_http(
    params: StreamableHTTPConnectionParams,
    headers: dict[str, str] | None,
    hook: ResponseHook,
    on_client: HttpClientHook | None,
) -> AsyncGenerator[Streams]:
    client = http_client(
        headers=params.http_headers(headers),
        connect_timeout=params.connect_timeout,
        read_timeout=max(params.call_timeout or 300.0, 300.0),
        auth=params.httpx_auth(),
        on_response=hook,
        factory=params.httpx_client_factory,
    )
    if on_client is not None:
        on_client(client, params.url)
    async with (
        client,
        streamable_http_client(
            params.url,
            http_client=client,
            terminate_on_close=params.terminate_on_close,
            # The SDK's default (1 MiB) fails a tool result of a few MiB sent as one SSE event; a gateway must pass
            # what its upstreams send. The request-body limit of our own front stays the guard against abuse.
            max_sse_event_size=_MAX_SSE_EVENT,
        ) as streams,
    ):
        yield streams
