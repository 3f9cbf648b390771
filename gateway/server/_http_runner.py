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
gives each connection a deadline for its request's headers and another for its body (`RequestTimeouts`), with
either of uvicorn's HTTP parsers: h11, or httptools from the `speed` extra (`gateway.server.event_loop`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import threading
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from types import FrameType
from typing import ClassVar, Final, Literal, Protocol, cast

import anyio
import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from gateway.errors import ConfigError
from gateway.server._repeat_filter import RepeatFilter, filtering_repeats
from gateway.server.event_loop import HttpParser

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


class _Cycle(Protocol):
    """What the deadlines read and set on uvicorn's request-response cycle (the h11 and httptools ones alike)."""

    response_started: bool
    response_complete: bool
    disconnected: bool
    message_event: asyncio.Event


class _RequestClock:
    """One connection's deadline for its current request's headers or body (`RequestTimeouts`).

    When one passes, the client gets `408 Request Timeout` (unless the application already started its response)
    and the connection is closed.

    Args:
        loop: the connection's event loop.
        transport: the connection.
        timeouts: the deadlines.
        cycle: the connection's current request-response cycle (uvicorn's `cycle` attribute); while headers are
            awaited it is still the previous request's (None before the first), so it is read only for a body.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        transport: asyncio.Transport,
        timeouts: RequestTimeouts,
        cycle: Callable[[], _Cycle | None],
    ) -> None:
        self._loop = loop
        self._transport = transport
        self._timeouts = timeouts
        self._cycle = cycle
        self.phase: _Phase = "done"
        self._deadline: asyncio.TimerHandle | None = None

    def arm(self, phase: _Phase) -> None:
        self.disarm()
        self.phase = phase
        seconds = self._timeouts.header_timeout if phase == "headers" else self._timeouts.body_timeout
        self._deadline = self._loop.call_later(seconds, self._expired)

    def disarm(self) -> None:
        self.phase = "done"
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        phase, self._deadline = self.phase, None
        self.phase = "done"
        if self._transport.is_closing():
            return
        cycle = self._cycle() if phase == "body" else None
        answerable = cycle is None or not cycle.response_started
        seconds = self._timeouts.header_timeout if phase == "headers" else self._timeouts.body_timeout
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
            self._transport.write(_TIMEOUT_RESPONSE)
        self._transport.close()


class _TimedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with deadlines for a request's headers and body (`_RequestClock`).

    Reads uvicorn's per-connection `conn`, `cycle` and `transport` attributes: its protocol class is the only place
    where the bytes of a request are seen arriving.
    """

    timeouts: ClassVar[RequestTimeouts] = RequestTimeouts()
    _clock: _RequestClock

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._clock = _RequestClock(self.loop, transport, self.timeouts, lambda: cast("_Cycle | None", self.cycle))
        self._clock.arm("headers")

    def handle_events(self) -> None:
        # Runs on every arrival of bytes and when a kept-alive connection turns to its next (buffered) request.
        super().handle_events()
        state = self.conn.their_state
        if state is h11.IDLE:
            # Part of the next request is in: its clock starts. An idle kept-alive connection is uvicorn's
            # keep-alive timeout's business (a 408 there could cross a request the client is sending).
            if self._clock.phase == "done" and self.conn.trailing_data[0]:
                self._clock.arm("headers")
        elif state is h11.SEND_BODY:
            if self._clock.phase != "body":
                self._clock.arm("body")
        else:
            self._clock.disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._clock.disarm()
        super().connection_lost(exc)


def _timed_httptools_protocol(timeouts: RequestTimeouts) -> type[asyncio.Protocol]:
    """uvicorn's httptools protocol with the same deadlines, driven by the parser's callbacks.

    Imported here: httptools is the optional `speed` extra.
    """
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class TimedHttpToolsProtocol(HttpToolsProtocol):
        _clock: _RequestClock

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._clock = _RequestClock(self.loop, transport, timeouts, lambda: cast("_Cycle | None", self.cycle))
            self._clock.arm("headers")

        def on_message_begin(self) -> None:
            # The first byte of a request: on a kept-alive connection, the next request's clock starts here.
            super().on_message_begin()
            if self._clock.phase == "done":
                self._clock.arm("headers")

        def on_header(self, name: bytes, value: bytes) -> None:
            # A field value's surrounding whitespace is not part of it (RFC 9110 5.5); h11 strips it, httptools
            # hands it over as sent, and the SDK then compared a padded `Mcp-Session-Id` or `Mcp-Name` verbatim.
            super().on_header(name, value.strip(b" \t"))

        def on_headers_complete(self) -> None:
            super().on_headers_complete()
            self._clock.arm("body")

        def on_message_complete(self) -> None:
            super().on_message_complete()
            self._clock.disarm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._clock.disarm()
            super().connection_lost(exc)

    return TimedHttpToolsProtocol


def timed_protocol(timeouts: RequestTimeouts, parser: HttpParser = "h11") -> type[asyncio.Protocol]:
    """An HTTP protocol class for `uvicorn.Config(http=...)` that parses with `parser` and enforces `timeouts`."""
    if parser == "httptools":
        return _timed_httptools_protocol(timeouts)
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
