"""`TaskRecord` and `TaskStore`: where a served task lives while it runs and after, until its TTL ends.

A record holds what `tasks/get` answers (status, message, the outstanding input requests, the result or error),
whom the task belongs to (`TaskOwner`), the answers `tasks/update` delivered that the running tool has not taken
yet, and the process running it with that process's last heartbeat (a task whose process stopped answering is
reported failed instead of working forever).

Every change is a compare-and-set on the record's version (`TaskStore.change`), so replicas sharing a store (Redis,
or several processes on one SQLite file) never lose one another's update: the replica running a task writes its
progress and result, any replica writes a client's answers or its cancellation.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from gateway.tasks.wire import TERMINAL_STATUSES, DetailedTask, TaskStatus, iso_timestamp

__all__ = ["Change", "InMemoryTaskStore", "TaskOwner", "TaskRecord", "TaskStore", "next_version"]


@dataclass(frozen=True)
class TaskOwner:
    """Who may see and steer a task: its principal, and its session when the creating request had a stable one.

    Attributes:
        principal: the authenticated principal (`local` without auth).
        session: the session owner key, or None for a caller without a lasting session (an anonymous sessionless
            client: then the task id, an unguessable secret, is what it holds the task by).
    """

    principal: str
    session: str | None

    def admits(self, principal: str, session: str) -> bool:
        """Whether a request of `principal` in `session` (its session owner key) reaches the task."""
        return principal == self.principal and (self.session is None or self.session == session)


class TaskRecord(BaseModel):
    """One served task, as stored (JSON)."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    app_name: str
    principal: str
    session: str | None
    tool: str
    status: TaskStatus = "working"
    status_message: str | None = None
    created_at: float
    updated_at: float
    ttl_ms: int
    poll_interval_ms: int
    input_requests: dict[str, Any] = {}
    """Outstanding input requests by key (JSON request objects), as `tasks/get` shows them."""
    responses: dict[str, Any] = {}
    """Answers delivered by `tasks/update` that the running tool has not taken yet."""
    asked: list[str] = []
    """Every input request key the task ever used (a key is never used twice)."""
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    runner: str = ""
    heartbeat: float = 0.0
    version: int = 0

    @property
    def owner(self) -> TaskOwner:
        return TaskOwner(self.principal, self.session)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @property
    def expires_at(self) -> float:
        return self.created_at + self.ttl_ms / 1000

    def changed(self, **fields: Any) -> TaskRecord:
        """This record with `fields` changed, its update time now."""
        return self.model_copy(update={**fields, "updated_at": time.time()})

    def detailed(self) -> DetailedTask:
        """What `tasks/get` answers for this record."""
        return DetailedTask(
            task_id=self.task_id,
            status=self.status,
            status_message=self.status_message,
            created_at=iso_timestamp(self.created_at),
            last_updated_at=iso_timestamp(self.updated_at),
            ttl_ms=self.ttl_ms,
            poll_interval_ms=self.poll_interval_ms,
            input_requests=dict(self.input_requests) if self.status == "input_required" else None,
            result=self.result if self.status == "completed" else None,
            error=self.error if self.status == "failed" else None,
        )


Change = Callable[[TaskRecord], TaskRecord | None]
"""A change to a record: the new record, or None to leave it as it is."""


def next_version(record: TaskRecord, change: Change) -> TaskRecord | None:
    """`change` applied to `record`, as the next version to store; None when it leaves the record as it is."""
    changed = change(record)
    return None if changed is None else changed.model_copy(update={"version": record.version + 1})


class TaskStore(Protocol):
    """Task records by id, each kept until its TTL ends (then gone: `get` answers None)."""

    @property
    def shared(self) -> bool:
        """Whether other processes may change the records (a running task then watches its own)."""
        ...

    async def create(self, record: TaskRecord) -> None:
        """Store a new record; it is readable by every replica once this returns."""
        ...

    async def get(self, task_id: str) -> TaskRecord | None:
        """The record, or None when there is none (never created, or expired)."""
        ...

    async def change(self, task_id: str, change: Change) -> TaskRecord | None:
        """Apply `change` to the current record atomically (again on a newer one if another writer came first).

        Returns the record as stored afterwards (None: no such record).
        """
        ...

    async def aclose(self) -> None:
        """Release the store's resources; calling it again does nothing."""
        ...


class InMemoryTaskStore:
    """Task records in this process (beside an in-memory state store): gone with the process."""

    def __init__(self) -> None:
        self._records: dict[str, TaskRecord] = {}

    @property
    def shared(self) -> bool:
        return False

    async def create(self, record: TaskRecord) -> None:
        self._sweep()
        self._records[record.task_id] = record.model_copy(update={"version": 1})

    async def get(self, task_id: str) -> TaskRecord | None:
        record = self._records.get(task_id)
        if record is not None and record.expires_at <= time.time():
            del self._records[task_id]
            return None
        return record

    async def change(self, task_id: str, change: Change) -> TaskRecord | None:
        # No await between the read and the write: nothing else runs in between.
        record = self._records.get(task_id)
        if record is None:
            return None
        stored = next_version(record, change)
        if stored is None:
            return record
        self._records[task_id] = stored
        return stored

    async def aclose(self) -> None:
        self._records.clear()

    def _sweep(self) -> None:
        now = time.time()
        for task_id in [key for key, record in self._records.items() if record.expires_at <= now]:
            del self._records[task_id]
