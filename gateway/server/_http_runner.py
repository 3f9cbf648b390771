"""Running the HTTP app under uvicorn: a shutdown that lets running tool calls finish, and cancellation safety.

uvicorn's own shutdown, on SIGINT or SIGTERM, has three problems for an MCP server:

* it sets `should_exit` at once, and sse-starlette (which every SSE response here is) closes every open event
  stream as soon as it sees that flag, so a tool call in flight loses its result;
* after shutting down it re-raises the signal, so a clean SIGTERM shutdown still ends the process "killed by
  SIGTERM" rather than with exit code 0;
* `serve()` is not cancellation-safe: cancelled, it leaves the lifespan, connections and sockets half-closed.

`GracefulServer` drains first: a signal stops nothing until no tool call is running (or the grace period is
over), then hands over to uvicorn's graceful shutdown. A second signal skips the drain. `run_http` runs it so
that cancelling the caller shuts it down the same way.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import threading
import time
from collections.abc import Generator
from types import FrameType
from typing import Protocol

import anyio
import uvicorn

from gateway.errors import ConfigError

__all__ = ["GracefulServer", "listen", "run_http"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to `host:port`, bound here because uvicorn exits the process when it cannot bind.

    Raises:
        ConfigError: the address cannot be bound (the port is taken, the host is not an interface of this
            machine); the message says which and what to do.
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise ConfigError(f"Cannot listen on {host}:{port}: {exc}. Check the host name.") from exc
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise ConfigError(
            f"Cannot listen on {host}:{port}: {exc.strerror or exc}. Choose another port (--port) or host "
            "(--host), or stop the process that uses it."
        ) from exc
    return sock


class _CallCounter(Protocol):
    @property
    def active_calls(self) -> int: ...


class GracefulServer(uvicorn.Server):
    """A uvicorn server that waits for `calls.active_calls` to reach zero before it shuts down.

    Args:
        config: the uvicorn configuration; its `timeout_graceful_shutdown` also bounds the drain.
        calls: what reports the number of tool calls in flight (the `ToolServer`).
    """

    def __init__(self, config: uvicorn.Config, calls: _CallCounter) -> None:
        super().__init__(config)
        self._calls = calls
        self._drain_until: float | None = None
        self.interrupted = False
        """Whether a SIGINT stopped the server (the caller should then raise `KeyboardInterrupt`)."""

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """Start draining on the first signal; shut down on the second. Runs as a signal handler: flags only."""
        del frame
        self.interrupted = self.interrupted or sig == signal.SIGINT
        if self._drain_until is None:
            self._drain_until = time.monotonic() + (self.config.timeout_graceful_shutdown or 0)
        elif self.should_exit:
            self.force_exit = True
        else:
            self.should_exit = True

    async def on_tick(self, counter: int) -> bool:
        """uvicorn's tick (every 0.1 s), which ends the drain once no tool call runs."""
        if self._drain_until is not None and not self.should_exit:
            idle = self._calls.active_calls == 0
            if idle or time.monotonic() >= self._drain_until:
                self.should_exit = True
        return await super().on_tick(counter)

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None]:
        """Route SIGINT and SIGTERM to `handle_exit` while serving, without re-raising them afterwards."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in _SIGNALS}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


async def run_http(server: GracefulServer, sockets: list[socket.socket]) -> None:
    """Run `server` until a signal or the caller's cancellation stops it, gracefully either way.

    Raises:
        KeyboardInterrupt: SIGINT stopped the server (after it shut down), as Ctrl-C does elsewhere.
    """
    finished = anyio.Event()
    serving = anyio.CancelScope(shield=True)

    async def run() -> None:
        with serving:
            try:
                await server.serve(sockets=sockets)
            finally:
                finished.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        try:
            await finished.wait()
        finally:
            # Cancelled: shut down as a second signal would, within the grace period (plus uvicorn's slack).
            server.should_exit = True
            with (
                anyio.CancelScope(shield=True),
                anyio.move_on_after((server.config.timeout_graceful_shutdown or 0) + 2),
            ):
                await finished.wait()
            serving.cancel()
    if server.interrupted:
        raise KeyboardInterrupt
