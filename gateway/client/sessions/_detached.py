"""`DetachedTaskGroup`: an anyio task group living in a background task of its own.

ADK's habit is `toolset = McpToolset(...)`, `await toolset.get_tools()`, calls, `await toolset.close()` — no
`async with`, and close possibly from another task. Each upstream session still needs one owner task (the SDK's
client contexts hold cancel scopes that must be exited by the task that entered them), and those owners need a
task group that outlives the call that opened them. anyio has no public way to start a task outside the caller's
scope, so this module — the only place in the project that does so — starts one with asyncio's own primitive and
runs an ordinary anyio task group inside it. The loop holds only a weak reference to its tasks, so a module-level
set keeps the running ones alive.

The group ends when `aclose()` is awaited, when `stop_soon()` is called (from any thread, e.g. by a finalizer of a
garbage-collected toolset), or when the event loop shuts down (`asyncio.run` cancels the tasks left at its end):
its tasks are cancelled and their teardown (stdio children killed with their process group) runs.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Awaitable, Callable
from typing import Final, Self, TypeVar

import anyio
import anyio.abc

from gateway.errors import GatewayError

__all__ = ["DetachedTaskGroup", "run_within"]

logger = logging.getLogger(__name__)
_T = TypeVar("_T")

_CLOSE_DEADLINE: Final = 10.0
_running: set[asyncio.Task[None]] = set()
"""The background tasks of every open detached group (the loop itself keeps only weak references)."""


class DetachedTaskGroup:
    """A task group owned by a background task rather than by the caller's scope."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task_group: anyio.abc.TaskGroup | None = None
        self._ready = anyio.Event()
        self._stop = anyio.Event()
        self._finished = anyio.Event()

    @classmethod
    async def start(cls) -> Self:
        """Start the background task and return once its task group is open.

        Raises:
            GatewayError: the event loop is not asyncio's (on trio, use the toolset in `async with`).
        """
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError as exc:
            raise GatewayError(
                "Without `async with`, McpToolset runs its sessions on asyncio only; on another event loop use "
                "`async with McpToolset(...) as toolset:`."
            ) from exc
        group = cls()
        group._loop = loop
        # A fresh context: the background task must not inherit the first caller's context variables.
        task = loop.create_task(group._host(), context=contextvars.Context())
        _running.add(task)
        task.add_done_callback(_running.discard)
        await group._ready.wait()
        return group

    @property
    def task_group(self) -> anyio.abc.TaskGroup:
        """The open task group (owner tasks are started in it)."""
        if self._task_group is None or self._stop.is_set():
            raise GatewayError("This toolset's background task group has ended; a new one is started on next use.")
        return self._task_group

    @property
    def open(self) -> bool:
        """Whether tasks can still be started in the group."""
        return self._task_group is not None and not self._stop.is_set()

    async def _host(self) -> None:
        try:
            async with anyio.create_task_group() as task_group:
                self._task_group = task_group
                self._ready.set()
                await self._stop.wait()
                task_group.cancel_scope.cancel()
        except Exception:
            # Owner tasks never raise into the group; anything else is a bug worth a trace, not a crashed loop.
            logger.exception("A detached task group of McpToolset failed")
        finally:
            self._task_group = None
            self._finished.set()

    def stop_soon(self) -> None:
        """Ask the group to end, from any thread, without waiting (idempotent; a closed loop needs nothing)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            loop.call_soon_threadsafe(self._stop.set)
        except RuntimeError:  # the loop closed meanwhile: its tasks were cancelled with it
            return

    async def aclose(self) -> None:
        """End the group: its tasks are cancelled; waits (bounded) until they have finished."""
        self._stop.set()
        with anyio.move_on_after(_CLOSE_DEADLINE, shield=True):
            await self._finished.wait()


async def run_within(owners: anyio.abc.TaskGroup, seconds: float, work: Callable[[], Awaitable[_T]]) -> _T:
    """`work()` run in `owners`, waited for at most `seconds` (past that it goes on there).

    Raises:
        TimeoutError: `work` did not finish in time (it is still running).
    """
    done = anyio.Event()
    outcome: list[_T] = []
    failure: list[Exception] = []

    async def run() -> None:
        try:
            outcome.append(await work())
        except Exception as exc:  # noqa: BLE001 - handed to the waiting caller, never raised into the group
            failure.append(exc)
        finally:
            done.set()

    owners.start_soon(run)
    with anyio.move_on_after(seconds):
        await done.wait()
    if failure:
        raise failure[0]
    if outcome:
        return outcome[0]
    raise TimeoutError
