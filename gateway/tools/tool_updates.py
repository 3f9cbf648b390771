"""A generator tool's run: its yields are updates for the progress sink, the value it ends with is its result.

A sync generator's result is its return value (else its last yield); an async generator, which cannot return a
value, ends with its result as its last yield. So the last value is not known to be an update until the generator
goes on: a yield is held until the generator yields again (or returns a value of its own), and the value it ends
with is never delivered as progress. A progress report (`{"progress": n, "total": m, "message": ...}`) is an
update by its shape and is delivered at once. A tool that must be seen at once before a long step (`started`)
reports it as such, or calls `tool_context.report_progress`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator
from typing import Any, Final

import anyio
import anyio.to_thread

from gateway.tools.context import ToolContext

__all__ = ["drain_async_generator", "drain_generator", "is_progress_report"]

_NOTHING: Final = object()
_DONE: Final = object()


def is_progress_report(update: object) -> bool:
    """Whether `update` reports progress explicitly: a dict with a numeric `progress` (and optional `total`,
    `message`)."""
    return isinstance(update, dict) and isinstance(update.get("progress"), int | float)  # pyright: ignore[reportUnknownMemberType]


class _Updates:
    """The updates of one run, each delivered once the run goes past it (a progress report at once)."""

    def __init__(self, tool_context: ToolContext) -> None:
        self._context = tool_context
        self._held: Any = _NOTHING
        self.last: Any = None

    async def yielded(self, value: Any) -> None:
        await self.flush()
        self.last = value
        if is_progress_report(value):
            await self._context.send_progress(value)
        else:
            self._held = value

    async def flush(self) -> None:
        """Deliver the held value: the run went on past it, so it was an update."""
        held, self._held = self._held, _NOTHING
        if held is not _NOTHING:
            await self._context.send_progress(held)


async def drain_async_generator(generator: AsyncGenerator[Any, Any], tool_context: ToolContext) -> Any:
    """Deliver the generator's updates to the progress sink; the last value it yields is the result."""
    updates = _Updates(tool_context)
    try:
        async for update in generator:
            await updates.yielded(update)
    except Exception:
        await updates.flush()
        raise
    finally:
        # Shielded, so that the generator's `finally` can still await when the call was cancelled.
        with anyio.CancelScope(shield=True):
            await generator.aclose()
    return updates.last


def _step(generator: Generator[Any, Any, Any]) -> tuple[object, Any]:
    try:
        return None, next(generator)
    except StopIteration as stop:
        return _DONE, stop.value


async def drain_generator(generator: Generator[Any, Any, Any], tool_context: ToolContext) -> Any:
    """Run a generator's steps in a worker thread; the return value (else the last yield) is the result."""
    updates = _Updates(tool_context)
    try:
        while True:
            try:
                done, value = await anyio.to_thread.run_sync(_step, generator)
            except Exception:
                await updates.flush()
                raise
            if done is _DONE:
                if value is None:
                    return updates.last
                await updates.flush()
                return value
            await updates.yielded(value)
    finally:
        # Closing runs the generator's own `finally`; keep it from being cut short by a cancellation.
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(generator.close)
