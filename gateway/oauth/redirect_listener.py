"""The loopback listener an OAuth redirect comes back to (RFC 8252 §7.3: native apps redirect to `127.0.0.1`).

`redirect_listener` serves an ASGI app on an already bound socket while the block runs. The server's sign-ins use
it when the server has no HTTP front of its own (stdio); the client's `login` for the one interactive step of a user
login. Binding stays with each caller, so each says in its own words which setting picks another port.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncGenerator, Generator
from typing import Final

import anyio
import uvicorn
from starlette.types import ASGIApp

__all__ = ["redirect_listener"]

_STOP_DEADLINE: Final = 5.0


class _QuietServer(uvicorn.Server):
    """A uvicorn server that leaves the process's signals alone (the process that lent it the socket owns them)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None]:
        yield


@contextlib.asynccontextmanager
async def redirect_listener(app: ASGIApp, sock: socket.socket) -> AsyncGenerator[None]:
    """Serve `app` on `sock` (bound and listening) while the block runs; the socket is closed after it."""
    server = _QuietServer(uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1))
    with sock:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: server.serve(sockets=[sock]))
            try:
                yield
            finally:
                # uvicorn notices within its 0.1 s tick; the deadline bounds a slow shutdown.
                server.should_exit = True
                tg.cancel_scope.deadline = anyio.current_time() + _STOP_DEADLINE
