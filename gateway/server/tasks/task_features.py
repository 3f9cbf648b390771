"""`TaskFeatures`: the client's features lent to a call that may become a task.

Until the task exists the call behaves as any modern-era call (progress on its stream, a question ends the round
with an `InputRequiredResult`). A progress update is what turns it into a task (`TaskJob.progressed`); from then
on progress becomes the task's status message, log messages have no stream to travel on, and a question parks the
task in `input_required` until `tasks/update` answers it (`McpClientFeatures.suspend`).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Protocol

from mcp import types

from gateway.server.client_features import McpClientFeatures

__all__ = ["TaskFeatures", "TaskHooks"]


class TaskHooks(Protocol):
    """What the features of a call ask of the task it may become (`gateway.server.tasks.served_tasks`)."""

    @property
    def published(self) -> bool:
        """Whether the task exists (its `CreateTaskResult` was or is being sent)."""
        ...

    def progressed(self, message: str | None) -> Awaitable[None]:
        """The tool reported progress: create the task if it does not exist yet, and show `message`."""
        ...


class TaskFeatures(McpClientFeatures):
    """`McpClientFeatures` of a call that may run as a task (see the module docstring)."""

    task: TaskHooks | None = None

    async def _progress(self, progress: float, total: float | None, message: str | None) -> None:
        if self.task is None:
            await super()._progress(progress, total, message)
            return
        if message is None:
            message = f"{progress:g}/{total:g}" if total else f"{progress:g}"
        await self.task.progressed(message)

    async def _log(self, level: types.LoggingLevel, data: Any, logger: str | None) -> None:
        # A task's call has ended for its client: the SEP gives tasks no log channel.
        if self.task is None or not self.task.published:
            await super()._log(level, data, logger)
