"""A child process a test starts and owns, and what it writes.

`child_process` starts a command in the project root and kills it on the way out if it has not exited, so a failed
test leaves no server running. `read_until` reads a child's output up to a line it waits for, `rest_of` what is
left once the child exited, `json_lines` the JSON messages of a stdio MCP server one by one.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
from anyio.streams.text import TextReceiveStream

from tests.support.paths import ROOT

__all__ = ["child_process", "json_lines", "read_until", "rest_of"]


@asynccontextmanager
async def child_process(
    command: Sequence[str], *, terminate_within: float | None = None, **options: Any
) -> AsyncGenerator[anyio.abc.Process]:
    """`anyio.open_process(command, cwd=ROOT, **options)`, stopped when the block is left while it still runs.

    With `terminate_within` it is sent SIGTERM first and killed only if it has not exited within that many seconds
    (a server that should stop cleanly, e.g. to release a shared store); without, it is killed at once.
    """
    async with await anyio.open_process(command, cwd=ROOT, **options) as process:
        try:
            yield process
        finally:
            if process.returncode is None and terminate_within is not None:
                process.terminate()
                with anyio.move_on_after(terminate_within, shield=True):
                    await process.wait()
            if process.returncode is None:
                process.kill()


async def read_until(stream: anyio.abc.ByteReceiveStream | None, marker: str) -> str:
    """The text of `stream` up to (and including the chunk that holds) `marker`."""
    assert stream is not None
    text = ""
    async for chunk in TextReceiveStream(stream):
        text += chunk
        if marker in text:
            break
    return text


async def rest_of(stream: anyio.abc.ByteReceiveStream | None) -> str:
    """The rest of `stream` (a child's stderr, say) as text, read to its end."""
    assert stream is not None
    return b"".join([chunk async for chunk in stream]).decode()


async def json_lines(stream: anyio.abc.ByteReceiveStream | None) -> AsyncIterator[dict[str, Any]]:
    """Each JSON line of `stream` (a stdio MCP server's stdout), parsed, until the stream ends."""
    assert stream is not None
    buffer = ""
    async for chunk in TextReceiveStream(stream):
        buffer += chunk
        *lines, buffer = buffer.split("\n")
        for line in filter(None, lines):
            yield json.loads(line)
