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

uvicorn also never times out a request that is slow to arrive: a client that sends half its headers or half its
body holds the connection and its file descriptor forever, and enough of them lock everyone out. `timed_protocol`
gives each connection a deadline for its request's headers and another for its body (`RequestTimeouts`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import threading
import time
from collections.abc import Generator
from dataclasses import dataclass
from types import FrameType
from typing import ClassVar, Final, Literal, Protocol, cast

import anyio
import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol, RequestResponseCycle

from gateway.errors import ConfigError
from gateway.server._repeat_filter import RepeatFilter, filtering_repeats

__all__ = ["GracefulServer", "RequestTimeouts", "listen", "run_http", "timed_protocol"]

logger = logging.getLogger(__name__)

_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_TIMEOUT_BODY: Final = b"Request Timeout: the request did not arrive in time.\n"
_TIMEOUT_RESPONSE: Final = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
    + f"content-length: {len(_TIMEOUT_BODY)}\r\n\r\n".encode()
    + _TIMEOUT_BODY
)
_FLOODING_LOGGERS: Final = ("asyncio", "uvicorn.error")
"""Loggers that repeat one line per connection under load (asyncio's accept loop when descriptors run out)."""


@dataclass(frozen=True)
class RequestTimeouts:
    """How long a client may take to send a request over HTTP.

    Args:
        header_timeout: seconds from the connection (or the first byte of a later request on a kept-alive
            connection) until the request line and headers are complete.
        body_timeout: seconds from the end of the headers until the body is complete.
    """

    header_timeout: float = 10.0
    body_timeout: float = 60.0


_Phase = Literal["headers", "body", "done"]


class _TimedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with deadlines for a request's headers and body.

    When one passes, the client gets `408 Request Timeout` (unless the application already started its response)
    and the connection is closed. Reads uvicorn's per-connection `conn`, `cycle` and `transport` attributes: its
    protocol class is the only place where the bytes of a request are seen arriving.
    """

    timeouts: ClassVar[RequestTimeouts] = RequestTimeouts()
    _phase: _Phase = "done"
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm("headers")

    def handle_events(self) -> None:
        # Runs on every arrival of bytes and when a kept-alive connection turns to its next (buffered) request.
        super().handle_events()
        state = self.conn.their_state
        if state is h11.IDLE:
            # Part of the next request is in: its clock starts. An idle kept-alive connection is uvicorn's
            # keep-alive timeout's business (a 408 there could cross a request the client is sending).
            if self._phase == "done" and self.conn.trailing_data[0]:
                self._arm("headers")
        elif state is h11.SEND_BODY:
            if self._phase != "body":
                self._arm("body")
        else:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self, phase: _Phase) -> None:
        self._disarm()
        self._phase = phase
        seconds = self.timeouts.header_timeout if phase == "headers" else self.timeouts.body_timeout
        self._deadline = self.loop.call_later(seconds, self._expired)

    def _disarm(self) -> None:
        self._phase = "done"
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        phase, self._deadline = self._phase, None
        self._phase = "done"
        if self.transport.is_closing():
            return
        # While headers are awaited, `cycle` is still the previous request's (None before the first).
        cycle = cast("RequestResponseCycle | None", self.cycle) if phase == "body" else None
        answerable = cycle is None or not cycle.response_started
        seconds = self.timeouts.header_timeout if phase == "headers" else self.timeouts.body_timeout
        # No client address in the message: identical lines are collapsed by the repeat filter.
        logger.warning(
            "Closed an HTTP connection whose request %s took longer than %g s%s.",
            phase,
            seconds,
            " (answered 408)" if answerable else "",
        )
        if cycle is not None and not cycle.response_complete:
            # The application sees a disconnect and can no longer send (its response would follow ours).
            cycle.disconnected = True
            cycle.message_event.set()
        if answerable:
            self.transport.write(_TIMEOUT_RESPONSE)
        self.transport.close()


def timed_protocol(timeouts: RequestTimeouts) -> type[H11Protocol]:
    """An HTTP protocol class for `uvicorn.Config(http=...)` that enforces `timeouts`."""
    return type("TimedH11Protocol", (_TimedH11Protocol,), {"timeouts": timeouts})


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to `host:port` and listening, bound here because uvicorn exits the process when it cannot bind.

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
        # Listening from here on, so connections made as soon as "Serving ..." is logged wait in the backlog.
        sock.listen(socket.SOMAXCONN)
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
    repeats = RepeatFilter()
    flooding = [logging.getLogger(name) for name in _FLOODING_LOGGERS]

    async def run() -> None:
        with serving:
            try:
                await server.serve(sockets=sockets)
            finally:
                finished.set()

    with filtering_repeats(repeats, flooding, logging.getLogger().handlers):
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
