"""Run a `ToolServer`: `serve()` (blocking), `serve_async()`, over stdio, SSE or streamable HTTP."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import sys
import uuid
from collections.abc import Sequence
from typing import Any, Literal, cast

import anyio
import uvicorn
from mcp.server.stdio import stdio_server

from gateway._write_check import CheckedWriteStream
from gateway.server._stdio_stop import stop_on_signal, stoppable_stdin
from gateway.server.auth.oauth_settings import OAuthSettings
from gateway.server.auth.static_tokens import tokens_from_env
from gateway.server.http._request_deadlines import RequestTimeouts, timed_protocol
from gateway.server.http._request_ids import MalformedIdFilter
from gateway.server.http._runner import GracefulServer, OpenPosts, listen, run_http
from gateway.server.http.app import DEFAULT_MAX_BODY, DEFAULT_SESSION_IDLE_TIMEOUT, create_app
from gateway.server.http.event_loop import HttpParserChoice, LoopChoice, chosen_http_parser, run_on_loop, running_loop
from gateway.server.http.sessions import DEFAULT_MAX_SESSIONS_PER_CLIENT, DEFAULT_RECLAIM_IDLE_AFTER
from gateway.server.identity import connection_id
from gateway.server.sign_in.callback_listener import callback_listener
from gateway.server.tool_server import ToolServer
from gateway.state import StateStore
from gateway.state.location import open_state_store, state_location
from gateway.tools.tool_union import ToolUnion

__all__ = ["METRICS_TOKEN_ENV", "Transport", "serve", "serve_async"]

logger = logging.getLogger(__name__)

Transport = Literal["stdio", "sse", "http"]
METRICS_TOKEN_ENV = "ADK_MCP_GATEWAY_METRICS_TOKEN"
"""The bearer token `/metrics` requires, read when none is given."""
DEFAULT_SHUTDOWN_GRACE = 10.0
"""Seconds a stopping HTTP server gives the tool calls in flight to finish before it cancels them."""
_CONNECTIONS_CLOSE = 3
"""Seconds uvicorn's own shutdown, after the calls ended, waits for connections (idle ones and event streams)."""


async def serve_async(
    tools: Sequence[ToolUnion] | ToolServer,
    *,
    name: str = "adk-mcp-gateway",
    transport: Transport = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
    sock: socket.socket | None = None,
    state_path: str | os.PathLike[str] | None = None,
    state_store: StateStore | None = None,
    auth_tokens: dict[str, str] | None = None,
    oauth: OAuthSettings | None = None,
    allowed_hosts: Sequence[str] = (),
    stateless: bool = False,
    json_response: bool = False,
    max_body_size: int = DEFAULT_MAX_BODY,
    header_timeout: float = RequestTimeouts.header_timeout,
    body_timeout: float = RequestTimeouts.body_timeout,
    session_idle_timeout: float = DEFAULT_SESSION_IDLE_TIMEOUT,
    max_sessions_per_client: int = DEFAULT_MAX_SESSIONS_PER_CLIENT,
    reclaim_idle_after: float = DEFAULT_RECLAIM_IDLE_AFTER,
    metrics: bool = False,
    metrics_token: str | None = None,
    metrics_host: str = "127.0.0.1",
    metrics_port: int | None = None,
    metrics_sock: socket.socket | None = None,
    http_parser: HttpParserChoice = "auto",
    fast_lane: bool = True,
    shutdown_grace: float = DEFAULT_SHUTDOWN_GRACE,
) -> None:
    """Serve tools until the client disconnects (stdio) or the process is interrupted (HTTP).

    Args:
        tools: callables, `BaseTool`s and `BaseToolset`s, or a ready `ToolServer`.
        name: the server name clients see (also the `app:` state scope).
        transport: `stdio` (for Claude Desktop), `sse` or `http` (streamable HTTP; both are served by the same
            HTTP app, at `/sse` and `/mcp`).
        host: interface to bind; loopback by default.
        port: TCP port for HTTP.
        sock: an already bound socket to serve on instead of `host`/`port` (tests use `127.0.0.1:0`).
        state_path: the SQLite file or `redis://` URL for session, `user:` and `app:` state (default:
            `gateway.state.location.state_location()`).
        state_store: a store object instead of the SQLite file.
        auth_tokens: {token: principal} required as bearer tokens over HTTP (default: `$ADK_MCP_GATEWAY_TOKENS`).
        oauth: serve HTTP as an OAuth 2.1 resource server: access tokens of this issuer for this resource.
        allowed_hosts: extra Host/Origin names accepted over HTTP (loopback is always accepted).
        stateless: streamable HTTP without sessions.
        json_response: plain JSON responses instead of SSE streams.
        max_body_size: largest accepted HTTP request body.
        header_timeout: seconds a client may take to send a request's headers over HTTP (then 408 and close).
        body_timeout: seconds a client may take to send a request's body once its headers are in.
        session_idle_timeout: seconds after which an idle streamable HTTP session ends (its session state with it).
        max_sessions_per_client: open HTTP sessions plus SSE connections per principal (per address when
            anonymous); one more gets HTTP 429 naming the limit.
        reclaim_idle_after: a client at its limit first loses its sessions idle at least this many seconds.
        metrics: serve `GET /metrics` over HTTP (Prometheus text format; needs the `metrics` extra).
        metrics_token: the bearer token `/metrics` requires (default: `$ADK_MCP_GATEWAY_METRICS_TOKEN`; without
            one, `/metrics` answers loopback clients only, or anyone reaching its own listener).
        metrics_host: the interface of the metrics listener (with `metrics_port`).
        metrics_port: serve `/metrics` on a listener of its own at `metrics_host:metrics_port` (implies
            `metrics`), and there alone; nothing else is served on it.
        metrics_sock: an already bound socket for that listener instead of `metrics_host`/`metrics_port`.
        http_parser: uvicorn's HTTP/1.1 parser: `auto` (httptools when the `speed` extra is installed, else h11),
            `h11` or `httptools` (`gateway.server.http.event_loop`).
        fast_lane: relay eligible `tools/call` requests of upstream tools below the SDK's server over streamable
            HTTP (`gateway.hub.forwarding.fast_lane`); False sends every request through the SDK.
        shutdown_grace: on SIGINT or SIGTERM, seconds the tool calls in flight may take to finish; then
            those still running are cancelled, each answered with a JSON-RPC error saying the server is stopping.
            A signal ends the server normally: this returns.

    Raises:
        ConfigError: `host:port` cannot be bound (HTTP); `http_parser` names one that is not installed.
    """
    if isinstance(tools, ToolServer):
        tool_server = tools
    else:
        store = state_store or open_state_store(state_location(state_path))
        tool_server = ToolServer(tools, name=name, state_store=store)
    if transport == "stdio":
        await _serve_stdio(tool_server, shutdown_grace)
        return
    parser = chosen_http_parser(http_parser)
    if sock is None:
        sock = listen(host, port)
    elif sock.family in (socket.AF_INET, socket.AF_INET6):
        # asyncio sets TCP_NODELAY only on sockets created with IPPROTO_TCP; on a socket made as
        # `socket.socket(AF_INET, SOCK_STREAM)` small SSE/JSON replies would wait ~40 ms for delayed ACKs.
        # Linux hands the option on to accepted connections.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if metrics_sock is None and metrics_port is not None:
        metrics_sock = listen(metrics_host, metrics_port)
    sockets = [sock] if metrics_sock is None else [sock, metrics_sock]
    app = create_app(
        tool_server,
        stateless=stateless,
        json_response=json_response,
        auth_tokens=auth_tokens if auth_tokens is not None else tokens_from_env(),
        oauth=oauth,
        allowed_hosts=allowed_hosts,
        max_body_size=max_body_size,
        session_idle_timeout=session_idle_timeout,
        max_sessions_per_client=max_sessions_per_client,
        reclaim_idle_after=reclaim_idle_after,
        metrics=metrics,
        metrics_token=metrics_token if metrics_token is not None else os.environ.get(METRICS_TOKEN_ENV) or None,
        metrics_port=metrics_sock.getsockname()[1] if metrics_sock is not None else None,
        fast_lane=fast_lane,
    )
    posts = OpenPosts(app)
    config = uvicorn.Config(
        posts,
        host=host,
        port=port,
        lifespan="on",
        # No WebSocket endpoint here: "auto" would import the websockets package (~0.5 MiB resident) for nothing.
        ws="none",
        http=timed_protocol(RequestTimeouts(header_timeout=header_timeout, body_timeout=body_timeout), parser),
        log_level="warning",
        # uvicorn's own lines go through the process's logging (its format, and its escaping of what clients send).
        log_config=None,
        timeout_graceful_shutdown=_CONNECTIONS_CLOSE,
    )
    server = GracefulServer(config, tool_server, posts=posts, grace=shutdown_grace)
    bound_host, bound_port = sock.getsockname()[:2]
    where = f"http://{f'[{bound_host}]' if ':' in bound_host else bound_host}:{bound_port}"
    # Said once the socket listens (a client may connect at once), with the port bound (`--port 0` picks one).
    logger.info(
        "Serving %s on %s/mcp (streamable HTTP) and %s/sse (SSE), on %s with %s; Ctrl-C stops.",
        tool_server.name,
        where,
        where,
        running_loop(),
        parser,
    )
    if metrics_sock is not None:
        logger.info("Serving metrics on port %s at /metrics", metrics_sock.getsockname()[1])
    await run_http(server, sockets)


async def _serve_stdio(tool_server: ToolServer, shutdown_grace: float) -> None:
    token = connection_id.set(uuid.uuid4().hex)
    try:
        async with contextlib.AsyncExitStack() as stack:
            if tool_server.credentials is not None:
                # Sign-ins need a callback route, and stdio has no HTTP front: a loopback listener serves it.
                url = await stack.enter_async_context(callback_listener(tool_server.credentials))
                logger.info("Sign-in callback on %s", url)
            await stack.enter_async_context(tool_server)
            logger.info("Serving %s over stdio, on %s.", tool_server.name, running_loop())
            sys.stdout.flush()
            # stdin is read so that a signal can end it (`gateway.server._stdio_stop`); the SDK reads any async
            # iterable of lines there, though it names anyio's file type. Windows has neither the signal receiver
            # nor a pollable stdin: there the SDK reads stdin, and a signal stops the process as it always did.
            stdin = stoppable_stdin()
            if stdin is not None:
                stack.enter_context(stdin.claimed())
            read, write = await stack.enter_async_context(
                stdio_server(stdin=cast("anyio.AsyncFile[str] | None", stdin))
            )
            # stdout is the wire now (the SDK points fd 1 at stderr and writes the wire to a copy): a tool's print()
            # goes to stderr through Python's own stdout too, at once, instead of sitting in stdout's buffer until
            # exit, when fd 1 is the wire again.
            stack.enter_context(contextlib.redirect_stdout(sys.stderr))
            # One message that cannot be serialised fails alone rather than ending the connection.
            write = CheckedWriteStream(write, "the client")
            # The SDK drops a malformed request id and never answers; the filter answers -32600 instead.
            requests = MalformedIdFilter(read, write)
            async with anyio.create_task_group() as tg:
                if stdin is not None:
                    await tg.start(stop_on_signal, tool_server, stdin, shutdown_grace)
                await tool_server.server.run(requests, write, tool_server.server.create_initialization_options())
                tg.cancel_scope.cancel()
    finally:
        connection_id.reset(token)


def serve(tools: Sequence[ToolUnion] | ToolServer, *, loop: LoopChoice = "auto", **options: Any) -> None:
    """Blocking form of `serve_async` (same arguments); returns when the server stops.

    `loop`: the event loop to run on: `auto` (uvloop when the `speed` extra is installed, else asyncio's),
    `asyncio` or `uvloop` (`gateway.server.http.event_loop`).

    Raises:
        ConfigError: `loop` names one that is not installed, or as `serve_async`.
    """
    run_on_loop(lambda: serve_async(tools, **options), loop=loop)
