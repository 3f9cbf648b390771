"""Loopback sockets and ports: a listening socket to hand a server, a free port for a child, a wait for that port, and
servers in this process on such a socket (any ASGI app under uvicorn; our server mode's `serve_async`)."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator, Generator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.abc
import uvicorn
from starlette.types import ASGIApp

from gateway.server import ToolServer, serve_async

__all__ = ["bound_socket", "free_port", "serving_asgi", "serving_tools", "wait_for_port"]

_STOP_SLACK = 5.0
"""Seconds beyond uvicorn's graceful shutdown that `serving_asgi` waits for it to stop before cancelling it."""


def bound_socket(port: int = 0, *, backlog: int = 128) -> socket.socket:
    """A listening TCP socket on `127.0.0.1` (a free port unless one is given)."""
    # IPPROTO_TCP, not the default 0: asyncio sets TCP_NODELAY on accepted connections only when the socket's
    # `proto` says TCP. Without it, Nagle plus delayed ACKs add ~40 ms to every JSON (2026-era) response.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(backlog)
    return sock


def free_port() -> int:
    """A loopback port that was free a moment ago (for a child that binds by port number).

    The port is found free and released; another process could take it in between, which a loopback test on a
    quiet machine can live with.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def wait_for_port(port: int, deadline: float, process: anyio.abc.Process | None = None) -> None:
    """Wait until something accepts TCP connections on `127.0.0.1:port` (a child without a health endpoint).

    Raises:
        TimeoutError: nothing accepted within `deadline` seconds.
        RuntimeError: `process` (the child meant to listen) exited first.
    """
    with anyio.fail_after(deadline):
        while True:
            if process is not None and process.returncode is not None:
                raise RuntimeError(f"the child process exited with {process.returncode} before it was ready")
            try:
                stream = await anyio.connect_tcp("127.0.0.1", port)
            except OSError:
                await anyio.sleep(0.05)
            else:
                await stream.aclose()
                return


class _UnsignalledServer(uvicorn.Server):
    """A uvicorn server that leaves the process's signal handlers alone (nothing signals a server in a test).

    uvicorn's `serve()` installs SIGINT/SIGTERM handlers and puts the previous ones back when it returns: right only
    when servers stop in the reverse order of their starts. One started before a `serve_async` server (which
    installs its handler a few scheduling steps later) and stopped first left its handler installed for good, and
    sse-starlette, which finds the process's uvicorn server through that handler, then cut every SSE response of
    every server in the process (tests/support/test_loopback.py).
    """

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None]:
        yield


@asynccontextmanager
async def serving_asgi(
    app: ASGIApp,
    sock: socket.socket | None = None,
    *,
    log_level: str = "warning",
    grace: float = 1.0,
    http: Literal["auto", "h11", "httptools"] = "auto",
    tls: tuple[Path, Path] | None = None,
) -> AsyncIterator[str]:
    """Serve `app` (lifespan on) under uvicorn on `sock` (default: a fresh `bound_socket()`); yields the base URL.

    With `tls` (a certificate file and its key file) the server speaks https and the URL says so.

    The socket listens before uvicorn starts, so clients may connect at once (the kernel queues them until uvicorn
    accepts). Leaving the block asks uvicorn to stop, gives its connections `grace` seconds to finish (uvicorn's
    `timeout_graceful_shutdown`), cancels it if it has not stopped a few seconds later, and closes the socket.
    `http` is uvicorn's HTTP parser. The server installs no signal handlers (`_UnsignalledServer`).
    """
    sock = sock or bound_socket()
    certfile, keyfile = tls if tls is not None else (None, None)
    config = uvicorn.Config(
        app,
        lifespan="on",
        log_level=log_level,
        timeout_graceful_shutdown=grace,
        http=http,
        ssl_certfile=certfile,
        ssl_keyfile=keyfile,
    )
    server = _UnsignalledServer(config)
    stopped = anyio.Event()

    async def run() -> None:
        try:
            await server.serve(sockets=[sock])
        finally:
            stopped.set()

    with sock:
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            try:
                scheme = "https" if tls is not None else "http"
                yield f"{scheme}://127.0.0.1:{sock.getsockname()[1]}"
            finally:
                server.should_exit = True
                with anyio.move_on_after(grace + _STOP_SLACK, shield=True):
                    await stopped.wait()
                tg.cancel_scope.cancel()


@asynccontextmanager
async def serving_tools(
    tool_server: ToolServer, sock: socket.socket | None = None, **options: Any
) -> AsyncIterator[str]:
    """Our server mode over HTTP in this process: `serve_async(tool_server, transport="http", sock=sock, **options)`
    on `sock` (default: a fresh `bound_socket()`) in a task group; yields the base URL, cancels the server after.

    Without `auth_tokens` in `options` the server requires none (whatever the environment says).
    """
    options.setdefault("auth_tokens", {})
    sock = sock or bound_socket()
    with sock:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: serve_async(tool_server, transport="http", sock=sock, **options))
            try:
                yield f"http://127.0.0.1:{sock.getsockname()[1]}"
            finally:
                tg.cancel_scope.cancel()
