"""`ServedTasks`: a task-supporting tool's call, served as an MCP Task (SEP-2663) to a client that declared the
extension.

Which calls: a local tool whose `task_support` is `optional` or `required` (every long-running tool), called in
the 2026-07-28 era by a client that declared `io.modelcontextprotocol/tasks` (in the request's `_meta`, or for its
session). A `required` tool called by a modern client without it gets `-32021`; every other call runs as before.

When the call becomes a task: the tool starts at once; it becomes a task at its first progress update, or once it
has run `TaskSettings.start_after` seconds, whichever comes first; a tool that ends before that answers the
`tools/call` itself, and a question it asks before that is asked the MRTR way (the round ends with an
`InputRequiredResult`, the retry runs it again with the answer) — so the MRTR exchanges of a call come before its
`CreateTaskResult`, as the SEP advises. The `CreateTaskResult` is sent once the record is stored (every replica's
`tasks/get` finds it).

While it runs: progress updates become the status message; a question (a confirmation, an elicitation, sampling)
parks the task in `input_required` with the request under a key never used again, until `tasks/update` delivers
the answer (partial answers leave it waiting); `tasks/cancel` cancels the tool (its generator is closed) and the task
reads `cancelled`. The end: the tool's result (`isError` included) is `completed`; a JSON-RPC error outside the tool
(the state could not be written, ...) is `failed`; a server that stops marks its running tasks `failed`, and a task
whose process stopped sending heartbeats (it crashed) reads `failed` too.

Who: a task belongs to the principal that created it and, when the creating request had a lasting session
(a `_meta` session key, an `mcp-session-id`, a stdio or SSE connection), to that session; any other caller is told
the task does not exist (the same `-32602` as for an id never issued). An anonymous sessionless client holds its
tasks by their ids, unguessable secrets.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final, Protocol, Self, cast

import anyio
import anyio.abc
from mcp import MCPError, types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from gateway.server.identity import ANONYMOUS_SESSION, CallIdentity, identify
from gateway.server.tasks.task_features import TaskFeatures
from gateway.server.tasks.task_job import TaskJob, TaskSettings
from gateway.tasks import wire
from gateway.tasks.records import TaskOwner, TaskRecord, TaskStore

__all__ = ["ForeignTasks", "ServedTasks", "TaskParams"]

logger = logging.getLogger(__name__)

_HEADER_MISMATCH: Final = -32020
_VANISHED: Final = "The server process running this task stopped answering before it finished; call the tool again."


def _owner(identity: CallIdentity) -> TaskOwner:
    key = identity.session_key
    lasting = not (identity.call_scoped or key == ANONYMOUS_SESSION or key.startswith("principal:"))
    return TaskOwner(identity.principal, identity.session_owner if lasting else None)


def _unknown(task_id: str) -> MCPError:
    return MCPError(
        code=types.INVALID_PARAMS,
        message=f"Unknown task {task_id!r}: no task of yours has this id (never created, or expired after its TTL).",
    )


TaskParams = wire.GetTaskParams | wire.UpdateTaskParams | wire.CancelTaskParams


class ForeignTasks(Protocol):
    """The tasks a server hands out without running them: a gateway's upstream tasks (`ServedTasks.foreign`)."""

    async def answer(
        self, ctx: ServerRequestContext[Any, Any], method: str, params: TaskParams
    ) -> dict[str, Any] | None:
        """The answer (wire form) to `method` for a task this server's own store does not hold; None: not yours
        either (the caller is told the task does not exist). Asked after the extension and `Mcp-Name` checks."""
        ...


class ServedTasks:
    """The tasks of one server: starting calls as tasks, and the `tasks/get|update|cancel` handlers.

    Enter it (the server does) before calls run as tasks: its task group runs them, and its end stops them.

    Args:
        store: where the records live (`gateway.tasks.placement.task_store_for`).
        app_name: the server's name; another server's tasks in a shared store are not this one's.
        settings: TTL, poll interval and the rest.
    """

    def __init__(self, store: TaskStore, app_name: str, settings: TaskSettings | None = None) -> None:
        self.store = store
        self.app_name = app_name
        self.settings = settings or TaskSettings()
        self.jobs: dict[str, TaskJob] = {}
        """The tasks running in this process, by id."""
        self.foreign: ForeignTasks | None = None
        """Who answers for the tasks this server hands out but does not run (a gateway's upstream tasks)."""
        self._runner = secrets.token_hex(8)
        self._group: anyio.abc.TaskGroup | None = None

    def serve_on(self, server: Server[Any]) -> None:
        """Answer `tasks/get|update|cancel` on `server`, and declare the tasks extension there."""
        server.add_request_handler(wire.TASKS_GET, wire.GetTaskParams, self.on_get)
        server.add_request_handler(wire.TASKS_UPDATE, wire.UpdateTaskParams, self.on_update)
        server.add_request_handler(wire.TASKS_CANCEL, wire.CancelTaskParams, self.on_cancel)
        server.extensions[wire.TASKS_EXTENSION] = {}

    async def __aenter__(self) -> Self:
        group = anyio.create_task_group()
        await group.__aenter__()
        self._group = group
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        group, self._group = self._group, None
        if group is not None:
            group.cancel_scope.cancel()
            await group.__aexit__(None, None, None)

    async def aclose(self) -> None:
        """Close the store."""
        await self.store.aclose()

    # --- tools/call ---------------------------------------------------------------------------------------------

    def wanted(self, ctx: ServerRequestContext[Any, Any], name: str, support: wire.TaskSupport) -> bool:
        """Whether this call of a tool with `support` runs as a (possible) task.

        Raises:
            MCPError: -32021, the tool runs only as a task and the modern-era client did not declare the extension.
        """
        if support == "forbidden" or self._group is None:
            return False
        negotiated = self.negotiated(ctx)
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return False
        if support == "required" and not negotiated:
            raise wire.missing_tasks_capability(f"The tool {name!r}")
        return negotiated

    @staticmethod
    def negotiated(ctx: ServerRequestContext[Any, Any]) -> bool:
        """Whether the request's client declared the extension (in the request's `_meta`, or for its session)."""
        meta = cast("dict[str, Any]", ctx.meta or {})
        declared = meta.get(wire.CLIENT_CAPABILITIES_META_KEY)
        return wire.declares_tasks(declared) or wire.declares_tasks(ctx.session.client_capabilities)

    async def start(
        self,
        identity: CallIdentity,
        tool: str,
        features: TaskFeatures,
        call: Callable[[], Awaitable[types.CallToolResult]],
    ) -> types.CallToolResult | dict[str, Any]:
        """Run `call`: its own result if it ends soon, else the `wire.CreateTaskResult` (wire form) of its task.

        Raises:
            InputRequired: the call asked a question before becoming a task (the round ends with it).
            Exception: what the call raised before becoming a task.
        """
        assert self._group is not None
        owner = _owner(identity)
        now = time.time()
        record = TaskRecord(
            task_id=secrets.token_urlsafe(24),
            app_name=self.app_name,
            principal=owner.principal,
            session=owner.session,
            tool=tool,
            created_at=now,
            updated_at=now,
            ttl_ms=round(self.settings.ttl * 1000),
            poll_interval_ms=max(1, round(self.settings.poll_interval * 1000)),
            runner=self._runner,
            heartbeat=now,
        )
        job = TaskJob(record, self.store, self.settings, self.jobs)
        features.task = job
        features.suspend = job.ask
        self._group.start_soon(job.run, call)
        try:
            with anyio.move_on_after(self.settings.start_after):
                await job.settled.wait()
            published = await job.publish()
        except BaseException:
            if not job.published:
                job.scope.cancel()  # nobody would ever see this call's end
            raise
        if not published:
            await job.settled.wait()
            return job.early()
        stored = job.record
        return wire.CreateTaskResult(
            task_id=stored.task_id,
            status="input_required" if stored.status == "input_required" else "working",
            status_message=stored.status_message,
            created_at=wire.iso_timestamp(stored.created_at),
            last_updated_at=wire.iso_timestamp(stored.updated_at),
            ttl_ms=stored.ttl_ms,
            poll_interval_ms=stored.poll_interval_ms,
        ).wire()

    # --- tasks/get, tasks/update, tasks/cancel ------------------------------------------------------------------

    async def on_get(self, ctx: ServerRequestContext[Any, Any], params: wire.GetTaskParams) -> dict[str, Any]:
        record = await self._owned(ctx, "tasks/get", params)
        if isinstance(record, dict):
            return record
        if not record.terminal and record.runner != self._runner:
            stale = time.time() - record.heartbeat > 3 * self.settings.heartbeat
            if stale:
                record = await self._fail_vanished(record)
        elif not record.terminal and record.task_id not in self.jobs:
            record = await self._fail_vanished(record)
        return record.detailed().wire()

    async def on_update(self, ctx: ServerRequestContext[Any, Any], params: wire.UpdateTaskParams) -> dict[str, Any]:
        record = await self._owned(ctx, "tasks/update", params)
        if isinstance(record, dict):
            return record
        given = params.input_responses

        def deliver(record: TaskRecord) -> TaskRecord | None:
            # Only answers to outstanding requests count; others (unknown, answered before) are ignored.
            answered = {key: value for key, value in given.items() if key in record.input_requests}
            if record.terminal or not answered:
                return None
            waiting = {key: value for key, value in record.input_requests.items() if key not in answered}
            return record.changed(
                input_requests=waiting,
                responses={**record.responses, **answered},
                status="input_required" if waiting else "working",
            )

        await self.store.change(record.task_id, deliver)
        job = self.jobs.get(record.task_id)
        if job is not None:
            job.wake()
        return wire.TaskAck().wire()

    async def on_cancel(self, ctx: ServerRequestContext[Any, Any], params: wire.CancelTaskParams) -> dict[str, Any]:
        record = await self._owned(ctx, "tasks/cancel", params)
        if isinstance(record, dict):
            return record
        await self.store.change(
            record.task_id,
            lambda r: (
                None
                if r.terminal
                else r.changed(
                    status="cancelled", input_requests={}, status_message="Cancelled at the client's request."
                )
            ),
        )
        job = self.jobs.get(record.task_id)
        if job is not None:
            job.scope.cancel()
        return wire.TaskAck().wire()

    async def _owned(
        self, ctx: ServerRequestContext[Any, Any], method: str, params: TaskParams
    ) -> TaskRecord | dict[str, Any]:
        """The caller's task; or, for a task this server did not start, the `foreign` tasks' answer."""
        task_id = params.task_id
        if not self.negotiated(ctx):
            raise wire.missing_tasks_capability(method)
        headers: Any = getattr(ctx.request, "headers", None)
        named = headers.get("mcp-name") if headers is not None else None
        if named is not None and named.strip() != task_id:
            raise MCPError(code=_HEADER_MISMATCH, message=f"The Mcp-Name header is not params.taskId of {method}.")
        identity = identify(ctx)
        record = await self.store.get(task_id)
        if record is None or record.app_name != self.app_name:
            answer = None if self.foreign is None else await self.foreign.answer(ctx, method, params)
            if answer is None:
                raise _unknown(task_id)
            return answer
        if not record.owner.admits(identity.principal, identity.session_owner):
            logger.warning("%s of task %s refused: it belongs to another principal or session", method, task_id)
            raise _unknown(task_id)
        return record

    async def _fail_vanished(self, record: TaskRecord) -> TaskRecord:
        error = types.ErrorData(code=types.INTERNAL_ERROR, message=_VANISHED)
        changed = await self.store.change(
            record.task_id,
            lambda r: (
                None
                if r.terminal or r.heartbeat != record.heartbeat
                else r.changed(
                    status="failed",
                    status_message=_VANISHED,
                    input_requests={},
                    error=error.model_dump(by_alias=True, mode="json", exclude_none=True),
                )
            ),
        )
        return changed or record
