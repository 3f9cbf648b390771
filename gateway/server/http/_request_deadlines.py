"""Deadlines for a request to arrive over HTTP: `timed_protocol`, uvicorn's HTTP protocol with `RequestTimeouts`.

uvicorn never times out a request that is slow to arrive: a client that sends half its headers or half its body
holds the connection and its file descriptor forever, and enough of them lock everyone out. `timed_protocol`
gives each connection a deadline for its request's headers and another for its body (`RequestTimeouts`), with
either of uvicorn's HTTP parsers: h11, or httptools from the `speed` extra (`gateway.server.http.event_loop`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Final, Literal, Protocol, cast

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from gateway.server.http.event_loop import HttpParser

__all__ = ["RequestTimeouts", "timed_protocol"]

logger = logging.getLogger(__name__)

_TIMEOUT_BODY: Final = b"Request Timeout: the request did not arrive in time.\n"
_TIMEOUT_RESPONSE: Final = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
    + f"content-length: {len(_TIMEOUT_BODY)}\r\n\r\n".encode()
    + _TIMEOUT_BODY
)


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
