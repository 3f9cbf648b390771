"""Stopping a stdio server on SIGINT or SIGTERM the way the HTTP server stops: every call in flight answered.

`stop_on_signal` waits for a signal, logs how many tool calls it waits for, gives them the grace period (a second
signal cuts it short), cancels those still running (each is answered with a JSON-RPC error saying the server is
stopping) and then ends the server's input (`StoppableStdin`), as a client closing stdin would: the SDK answers
whatever is still open and `Server.run` returns once every answer is written, so the process exits 0.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
from collections.abc import AsyncIterator, Generator
from typing import Final, Protocol, Self

import anyio
import anyio.abc

from gateway.server.running_calls import log_cancelling, log_stopping, stopping_reason

__all__ = ["StoppableStdin", "stop_on_signal", "stoppable_stdin"]

_CHUNK: Final = 1 << 16
_ANSWER_SLACK: Final = 2.0
"""Seconds cancelled calls have to end before the input is ended without them (the SDK then answers them)."""


class _Calls(Protocol):
    @property
    def active_calls(self) -> int: ...

    async def calls_ended(self) -> None: ...

    def refuse_calls(self) -> None: ...

    def cancel_calls(self, reason: str) -> int: ...


class StoppableStdin:
    """The process's stdin as the lines `stdio_server(stdin=...)` reads, until `stop` ends them as an EOF would.

    The SDK reads stdin in a worker thread, which nothing can interrupt: a server told to stop while its client
    keeps stdin open would wait for the client's next line. Here stdin is read when the event loop says it is
    readable (a regular file, which cannot be polled and never blocks, in a thread). While `claimed`, fd 0 points
    at the null device, as the SDK's own stdin does, so a handler or a child process cannot read the wire.
    """

    def __init__(self) -> None:
        self._fd: int | None = None
        self._stopped = False
        self._waiting: anyio.CancelScope | None = None

    @contextlib.contextmanager
    def claimed(self) -> Generator[Self]:
        """Read from a private duplicate of fd 0, and point fd 0 at the null device, while inside (POSIX)."""
        import fcntl  # POSIX only: importing this module must not fail elsewhere

        private = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        self._fd = private
        try:
            yield self
        finally:
            os.dup2(private, 0)
            os.close(private)
            self._fd = None

    def stop(self) -> None:
        """End the lines: a pending read and every later one end them as stdin's end would."""
        self._stopped = True
        if self._waiting is not None:
            self._waiting.cancel()

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        pending = b""
        while (chunk := await self._read()) is not None:
            if not chunk:
                break
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                yield line.decode("utf-8", errors="replace") + "\n"
        if pending and not self._stopped:
            yield pending.decode("utf-8", errors="replace")

    async def _read(self) -> bytes | None:
        """The next bytes of stdin (empty at its end); None once stopped."""
        fd = self._fd
        if fd is None:
            raise RuntimeError("StoppableStdin is read outside claimed()")
        with anyio.CancelScope() as waiting:
            self._waiting = waiting
            try:
                if self._stopped:
                    return None
                if stat.S_ISREG(os.fstat(fd).st_mode):
                    return await anyio.to_thread.run_sync(os.read, fd, _CHUNK)
                await anyio.wait_readable(fd)
                return os.read(fd, _CHUNK)
            finally:
                self._waiting = None
        return None


def stoppable_stdin() -> StoppableStdin | None:
    """A `StoppableStdin`, or None where stdin cannot be polled nor signals received (Windows)."""
    if os.name == "nt":
        return None
    return StoppableStdin()


async def stop_on_signal(
    calls: _Calls,
    stdin: StoppableStdin,
    grace: float,
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """On SIGINT or SIGTERM, let the calls in flight finish within `grace` seconds, cancel the rest, end `stdin`."""
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        task_status.started()
        async for first in signals:
            calls.refuse_calls()
            log_stopping(signal.Signals(first).name, grace, calls.active_calls)
            break
        hurried = False
        async with anyio.create_task_group() as drain:

            async def hurry() -> None:
                nonlocal hurried
                async for _ in signals:
                    hurried = True
                    drain.cancel_scope.cancel()

            drain.start_soon(hurry)
            with anyio.move_on_after(grace):
                await calls.calls_ended()
            drain.cancel_scope.cancel()
        # Signals from here on are ignored (still received): the answers are moments away.
        if calls.active_calls:
            waited = None if hurried else grace
            log_cancelling(calls.cancel_calls(stopping_reason(waited)), waited)
            with anyio.move_on_after(_ANSWER_SLACK):
                await calls.calls_ended()
        stdin.stop()
