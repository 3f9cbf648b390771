"""Running the HTTP app under uvicorn: a shutdown that answers the tool calls in flight, and cancellation safety.

uvicorn's own shutdown, on SIGINT or SIGTERM, has three problems for an MCP server:

* it sets `should_exit` at once, and sse-starlette (which every SSE response here is) closes every open event
  stream as soon as it sees that flag, so a tool call in flight loses its result;
* after shutting down it re-raises the signal, so a clean SIGTERM shutdown still ends the process "killed by
  SIGTERM" rather than with exit code 0;
* `serve()` is not cancellation-safe: cancelled, it leaves the lifespan, connections and sockets half-closed.

`GracefulServer` drains first: a signal stops nothing until no tool call is running and every POST has its
response (or the grace period is over, and the calls still running are cancelled and answered with an error), then
hands over to uvicorn's graceful shutdown. It logs what it waits for. `run_http` runs it so that cancelling the
caller shuts it down the same way, and returns normally after a signal (exit code 0). The deadlines for a request
to arrive are `gateway.server.http._request_deadlines`.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
import threading
import time
from collections.abc import Generator
from types import FrameType
from typing import Final, Protocol

import anyio
import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.errors import ConfigError
from gateway.server.observe._repeat_filter import RepeatFilter, filtering_repeats
from gateway.server.running_calls import log_cancelling, log_stopping, stopping_reason

__all__ = ["GracefulServer", "OpenPosts", "listen", "run_http"]

logger = logging.getLogger(__name__)

_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_SIGNALS_TO_FORCE: Final = 2
"""Signals after which the server exits without waiting for anything (the third)."""
_ANSWER_SLACK: Final = 2.0
"""Seconds cancelled calls have to be answered before the server shuts down without them."""
_FLOODING_LOGGERS: Final = ("asyncio", "uvicorn.error")
"""Loggers that repeat one line per connection under load (asyncio's accept loop when descriptors run out)."""


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


class _Calls(Protocol):
    """The tool calls a server runs (the `ToolServer`)."""

    @property
    def active_calls(self) -> int: ...

    def refuse_calls(self) -> None: ...

    def cancel_calls(self, reason: str) -> int: ...


class OpenPosts:
    """ASGI middleware counting the POST requests whose response is not complete yet (`open`).

    A tool call's result travels in the response to its POST (streamable HTTP): the call's handler has returned a
    moment before the response is written, so a stopping server waits for these too. An event stream the server cut
    when it stopped (sse-starlette ends every one without its last, empty chunk) is completed here, so that uvicorn
    does not log the stop as an application error.
    """

    def __init__(self, app: ASGIApp) -> None:
        self._app = app
        self.open = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope.get("method") if scope["type"] == "http" else None
        if method == "POST":
            self.open += 1
            try:
                await self._app(scope, receive, send)
            finally:
                self.open -= 1
        elif method == "GET":
            # The event streams (`GET /mcp`, `GET /sse`): the POSTs' are complete before the server stops.
            response = _Response(send)
            await self._app(scope, receive, response.send)
            if response.started and not response.complete:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        else:
            await self._app(scope, receive, send)


class _Response:
    """An HTTP response's `send`, noting whether it started and whether its body is complete."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.started = False
        self.complete = False

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started = True
        elif message["type"] == "http.response.body" and not message.get("more_body", False):
            self.complete = True
        await self._send(message)


class GracefulServer(uvicorn.Server):
    """A uvicorn server that, told to stop, lets the tool calls in flight finish before it shuts down.

    On SIGINT or SIGTERM it logs how many calls it waits for, waits up to `grace` seconds for them (and for their
    responses to be written), then cancels any still running (each is answered with a JSON-RPC error saying the
    server is stopping) and shuts down. A second signal cancels the calls at once; a third exits without waiting.

    Args:
        config: the uvicorn configuration; its `timeout_graceful_shutdown` bounds uvicorn's own shutdown, which
            follows (idle connections and open event streams, which close at once).
        calls: the tool calls in flight (the `ToolServer`).
        posts: the POST requests in flight (`OpenPosts`, wrapping the app), if counted.
        grace: seconds the calls in flight may take to finish.
    """

    def __init__(self, config: uvicorn.Config, calls: _Calls, *, posts: OpenPosts | None = None, grace: float) -> None:
        super().__init__(config)
        self._calls = calls
        self._posts = posts
        self._grace = grace
        self._signals: list[int] = []
        self._drain_until: float | None = None
        self._at_once = False
        self._answer_until: float | None = None
        """Set once the calls were cancelled: how long their answers may take to be written."""

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """Note the signal; `on_tick` acts on it. Runs as a signal handler: flags only."""
        del frame
        self._signals.append(sig)
        if len(self._signals) > _SIGNALS_TO_FORCE:
            self.should_exit = self.force_exit = True

    def stop(self, *, at_once: bool = False) -> None:
        """Stop as a signal would: after the grace period, or (`at_once`) cancelling the calls in flight now."""
        now = time.monotonic()
        # New calls are refused at once, so their clients retry elsewhere; the ones in flight may finish.
        self._calls.refuse_calls()
        self._at_once = self._at_once or at_once
        if self._drain_until is None:
            self._drain_until = now if at_once else now + self._grace
        elif at_once:
            self._drain_until = min(self._drain_until, now)

    async def on_tick(self, counter: int) -> bool:
        """uvicorn's tick (every 0.1 s): starts the drain on a signal, cancels calls past the grace, ends it."""
        if self._signals and self._drain_until is None:
            self.stop()
            log_stopping(signal.Signals(self._signals[0]).name, self._grace, self._calls.active_calls)
        if len(self._signals) > 1 and self._answer_until is None:
            self.stop(at_once=True)
        if self._drain_until is not None and not self.should_exit:
            self._drain(time.monotonic())
        return await super().on_tick(counter)

    def _drain(self, now: float) -> None:
        assert self._drain_until is not None
        running = self._calls.active_calls
        if now >= self._drain_until and self._answer_until is None:
            if running:
                grace = None if self._at_once else self._grace
                log_cancelling(self._calls.cancel_calls(stopping_reason(grace)), grace)
            # Also bounds a POST that is no call (a client slow to send its body): it does not hold the stop.
            self._answer_until = now + _ANSWER_SLACK
        answering = self._posts.open if self._posts is not None else 0
        if running == 0 and answering == 0:
            self.should_exit = True
        elif self._answer_until is not None and now >= self._answer_until:
            logger.warning(
                "Shutting down with %d tool call(s) that did not end when cancelled and %d request(s) unanswered.",
                running,
                answering,
            )
            self.should_exit = True

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

    A signal is a normal end: this returns once the server has shut down.
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
                # Cancelled: shut down as a second signal would (calls cancelled and answered), within bounds.
                server.stop(at_once=True)
                with (
                    anyio.CancelScope(shield=True),
                    anyio.move_on_after(_ANSWER_SLACK + (server.config.timeout_graceful_shutdown or 0) + 2),
                ):
                    await finished.wait()
                serving.cancel()
