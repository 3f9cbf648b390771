"""`ToolsetOwners`: one owner task per open toolset, so a toolset can be opened and closed while the server runs.

A toolset that holds connections (an `McpToolset`'s upstream sessions and their stdio children) is an async
context: it must be left by the task that entered it. Each toolset gets a task of its own that enters it, waits
until told to stop, and leaves it; so a config reload can open a new toolset and close a removed one from any task,
and the server's shutdown closes the rest at once.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Final, Self

import anyio
import anyio.abc

from gateway.tools import BaseToolset

__all__ = ["ToolsetOwners"]

logger = logging.getLogger(__name__)

_CLOSE_DEADLINE: Final = 30.0
"""Seconds a toolset may take to close before its owner task is cancelled (each toolset bounds its own too)."""


class ToolsetOwners:
    """The owner tasks of a server's toolsets (an async context: leaving it closes every toolset still open)."""

    def __init__(self) -> None:
        self._task_group: anyio.abc.TaskGroup | None = None
        self._stops: dict[int, tuple[BaseToolset, anyio.Event, anyio.Event]] = {}

    async def __aenter__(self) -> Self:
        task_group = anyio.create_task_group()
        await task_group.__aenter__()
        self._task_group = task_group
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        task_group, self._task_group = self._task_group, None
        for _, stop, _ in self._stops.values():
            stop.set()
        if task_group is None:
            return
        with anyio.move_on_after(_CLOSE_DEADLINE, shield=True):
            while self._stops:
                _, _, closed = next(iter(self._stops.values()))
                await closed.wait()
        task_group.cancel_scope.cancel()
        await task_group.__aexit__(None, None, None)

    def holds(self, toolset: BaseToolset) -> bool:
        """Whether `toolset` is open under an owner task here."""
        return id(toolset) in self._stops

    async def open(self, toolset: BaseToolset) -> None:
        """Enter `toolset` in an owner task of its own; returns once it is open.

        Raises:
            RuntimeError: the owners are not entered (`async with`).
            Exception: whatever entering the toolset raised (it is then not held).
        """
        if self._task_group is None:
            raise RuntimeError("ToolsetOwners.open needs `async with ToolsetOwners()` around it.")
        if self.holds(toolset):
            return
        await self._task_group.start(self._own, toolset)

    async def close(self, toolset: BaseToolset) -> None:
        """Tell the owner task of `toolset` to leave it, and wait (bounded) until it has."""
        held = self._stops.get(id(toolset))
        if held is None:
            return
        _, stop, closed = held
        stop.set()
        with anyio.move_on_after(_CLOSE_DEADLINE, shield=True):
            await closed.wait()

    async def _own(self, toolset: BaseToolset, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        stop, closed = anyio.Event(), anyio.Event()
        try:
            async with contextlib.AsyncExitStack() as stack:
                await stack.enter_async_context(toolset)
                self._stops[id(toolset)] = (toolset, stop, closed)
                task_status.started()
                await stop.wait()
        except Exception:
            if not self.holds(toolset):
                raise  # entering failed: `open` raises it
            # A toolset that fails while closing must not take the server's other toolsets down with it.
            logger.exception("Closing %r failed", toolset)
        finally:
            self._stops.pop(id(toolset), None)
            closed.set()
