"""`TaskJob`: one task-supporting call, from its start to the end of its task (see `gateway.server.tasks.served_tasks`).

It runs the tool, makes the call a task when it reports progress or has run a moment (`publish`), parks the task
while a question waits for `tasks/update` (`ask`), follows another replica's answers and cancellation and beats its
heart (`_watch`), and writes how the call ended: to the task, or for `early` when it ended before becoming one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

import anyio
import anyio.lowlevel
from mcp import MCPError, types

from gateway.tasks.records import TaskRecord, TaskStore
from gateway.tools.context import InputRequired

__all__ = ["STOPPED", "TaskJob", "TaskSettings"]

logger = logging.getLogger(__name__)

STOPPED: Final = "The server stopped before the task finished; call the tool again."


@dataclass(frozen=True)
class TaskSettings:
    """How served tasks behave.

    Attributes:
        ttl: seconds a task is kept from its creation (`ttlMs`).
        poll_interval: seconds suggested between two `tasks/get` (`pollIntervalMs`).
        start_after: seconds a task-supporting call may run before it becomes a task (unless it reports progress
            first); a call that ends sooner answers `tools/call` directly.
        watch: seconds between two looks of a running task at its record, for another replica's answer or
            cancellation (answers and cancellations reaching this process wake it at once).
        heartbeat: seconds between two heartbeats of a running task; a task without one for three of them is
            reported failed (its process is gone).
    """

    ttl: float = 3600.0
    poll_interval: float = 0.5
    start_after: float = 0.1
    watch: float = 1.0
    heartbeat: float = 10.0


class TaskJob:
    """One call that may become a task: runs the tool, publishes the task, parks it for answers, writes its end."""

    def __init__(
        self, record: TaskRecord, store: TaskStore, settings: TaskSettings, running: dict[str, TaskJob]
    ) -> None:
        self._store = store
        self._settings = settings
        self._running = running
        self.record = record
        self.scope = anyio.CancelScope()
        self.settled = anyio.Event()
        """Set once the call is a task, or has ended before becoming one."""
        self._lock = anyio.Lock()
        self._published = False
        self._ended = False
        self._early: types.CallToolResult | BaseException | None = None
        self._wake = anyio.Event()

    @property
    def task_id(self) -> str:
        return self.record.task_id

    @property
    def published(self) -> bool:
        return self._published

    async def publish(self, message: str | None = None) -> bool:
        """Make the call a task (stored first, showing `message`); False when it ended before becoming one."""
        async with self._lock:
            if self._ended:
                return self._published
            if not self._published:
                if message is not None:
                    self.record = self.record.model_copy(update={"status_message": message})
                await self._store.create(self.record)
                self._published = True
                self._running[self.task_id] = self
                self.settled.set()
            return True

    async def progressed(self, message: str | None) -> None:
        if not self._published:
            await self.publish(message)  # the first update is stored with the task
            return
        await self._store.change(self.task_id, lambda r: None if r.terminal else r.changed(status_message=message))

    def wake(self) -> None:
        self._wake.set()

    async def ask(self, needed: InputRequired) -> Any:
        """Park the task until `tasks/update` answers `needed`; before the task exists, end the round (MRTR)."""
        async with self._lock:
            if not self._published:
                self._ended = True  # the call ends with this question; it never becomes a task
                raise needed
        key, request = needed.key, needed.request.model_dump(by_alias=True, mode="json", exclude_none=True)
        store = self._store
        await store.change(
            self.task_id,
            lambda r: (
                None
                if r.terminal
                else r.changed(
                    status="input_required", input_requests={**r.input_requests, key: request}, asked=[*r.asked, key]
                )
            ),
        )
        while True:
            record = await store.get(self.task_id)
            if record is None or record.terminal:
                self.scope.cancel()
                await anyio.lowlevel.checkpoint()
                raise RuntimeError(f"Task {self.task_id} ended while it waited for an answer.")
            if key in record.responses:
                answer = record.responses[key]
                await store.change(
                    self.task_id,
                    lambda r: r.changed(responses={k: v for k, v in r.responses.items() if k != key}),
                )
                return answer
            self._wake = anyio.Event()
            with anyio.move_on_after(self._settings.watch):
                await self._wake.wait()

    def early(self) -> types.CallToolResult:
        """The outcome of a call that ended before becoming a task: its result, or what it raised."""
        if isinstance(self._early, BaseException):
            raise self._early
        assert self._early is not None
        return self._early

    async def run(self, call: Callable[[], Awaitable[types.CallToolResult]]) -> None:
        """Run the call; write how it ended (to the task, or for `early`)."""
        result: types.CallToolResult | None = None
        raised: BaseException | None = None
        error: types.ErrorData | None = None
        try:
            async with anyio.create_task_group() as watching:
                if self._store.shared:
                    watching.start_soon(self._watch)
                with self.scope:
                    try:
                        result = await call()
                    except InputRequired as needed:
                        raised = needed
                    except MCPError as exc:
                        raised, error = exc, exc.error
                    except Exception as exc:
                        logger.exception("The task of tool %s failed", self.record.tool)
                        raised = exc
                        error = types.ErrorData(
                            code=types.INTERNAL_ERROR, message=f"The tool {self.record.tool} failed: {exc}"
                        )
                watching.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await self._end(result, raised, error)

    async def _end(
        self, result: types.CallToolResult | None, raised: BaseException | None, error: types.ErrorData | None
    ) -> None:
        async with self._lock:
            published, self._ended = self._published, True
            if not published:
                self._early = result if result is not None else raised or MCPError(types.INTERNAL_ERROR, STOPPED)
                self.settled.set()
                return
        fields: dict[str, Any]
        if self.scope.cancel_called:
            fields = {"status": "cancelled"}
        elif result is not None:
            fields = {"status": "completed", "result": result.model_dump(by_alias=True, mode="json", exclude_none=True)}
        else:
            error = error or types.ErrorData(code=types.INTERNAL_ERROR, message=STOPPED)
            fields = {
                "status": "failed",
                "status_message": error.message,
                "error": error.model_dump(by_alias=True, mode="json", exclude_none=True),
            }
        try:
            await self._store.change(
                self.task_id, lambda r: None if r.terminal else r.changed(input_requests={}, **fields)
            )
        finally:
            self._running.pop(self.task_id, None)

    async def _watch(self) -> None:
        """Heartbeats, and another replica's answers and cancellation, while the task runs."""
        settings, store = self._settings, self._store
        beat = time.monotonic()
        while True:
            await anyio.sleep(settings.watch)
            if not self._published:
                continue
            if time.monotonic() - beat >= settings.heartbeat:
                beat = time.monotonic()
                record = await store.change(self.task_id, lambda r: r.changed(heartbeat=time.time()))
            else:
                record = await store.get(self.task_id)
            if record is None or record.status == "cancelled":
                self.scope.cancel()
            elif record.responses:
                self.wake()
