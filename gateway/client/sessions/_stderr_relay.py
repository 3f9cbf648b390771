"""What a stdio upstream writes to its stderr, sent to the log line by line, each line prefixed with its name.

Left alone, a child's stderr is the gateway's own: under `adk-mcp-gateway call` it would interleave raw with the
command's output, and in a server's log nobody could tell which upstream said what. The lines are logged at info
level under `gateway.client.stderr`, with the record attribute `upstream` for structured logs.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import sys
from collections.abc import AsyncGenerator
from typing import Final, TextIO

import anyio

__all__ = ["last_stderr_lines", "stderr_relay"]

logger = logging.getLogger("gateway.client.stderr")

_CHUNK: Final = 65536
_MAX_LINE: Final = 8192
"""A longer line is logged in pieces of this many characters."""
_DRAIN_DEADLINE: Final = 2.0
"""Seconds to read what is left once the child is gone (a grandchild may hold the pipe open)."""
_TAIL: Final = 10
"""How many of an upstream's last stderr lines `last_stderr_lines` keeps."""

_tails: dict[str, collections.deque[str]] = {}


def last_stderr_lines(name: str) -> list[str]:
    """The last lines the upstream `name` wrote to stderr in its latest run (what says why it failed to start)."""
    return list(_tails.get(name, ()))


def _emit(name: str, line: bytes) -> None:
    text = line.decode(errors="replace").rstrip("\r\n")
    _tails.setdefault(name, collections.deque(maxlen=_TAIL)).append(text[:_MAX_LINE])
    for start in range(0, max(len(text), 1), _MAX_LINE):
        logger.info("[%s] %s", name, text[start : start + _MAX_LINE], extra={"upstream": name})


async def _relay(read_fd: int, name: str, done: anyio.Event) -> None:
    pending = b""
    try:
        while True:
            await anyio.wait_readable(read_fd)
            try:
                chunk = os.read(read_fd, _CHUNK)
            except BlockingIOError:
                continue
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                _emit(name, line)
            if len(pending) > _MAX_LINE:
                _emit(name, pending)
                pending = b""
        if pending:
            _emit(name, pending)
    finally:
        os.close(read_fd)
        done.set()


@contextlib.asynccontextmanager
async def stderr_relay(name: str) -> AsyncGenerator[TextIO]:
    """A file to give a child as its stderr; what the child writes there is logged as `[name] line`.

    On leaving, what is still in the pipe is read (for at most 2 s) and the reader stops. Where the event loop
    cannot wait on a pipe (Windows), the child gets this process's stderr as before.
    """
    if sys.platform == "win32":  # pragma: no cover - the proactor loop cannot wait on pipe descriptors
        yield sys.stderr
        return
    _tails.pop(name, None)
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    errlog = os.fdopen(write_fd, "w")
    done = anyio.Event()
    async with anyio.create_task_group() as relays:
        relays.start_soon(_relay, read_fd, name, done)
        try:
            yield errlog
        finally:
            # The child holds its own copy of the write end; ours must close for the reader to see the end.
            errlog.close()
            with anyio.move_on_after(_DRAIN_DEADLINE, shield=True):
                await done.wait()
            relays.cancel_scope.cancel()
