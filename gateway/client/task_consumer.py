"""Consuming the Tasks extension (SEP-2663) of an upstream: a task handle finished into the call's result.

`TasksExtension` is the SDK client extension a session is built with when its toolset has `enable_tasks`: it
declares `io.modelcontextprotocol/tasks` (modern-era sessions only: the extension is 2026-07-28 vocabulary) and
claims the `resultType: "task"` answer of `tools/call`, which `finish_task` then turns into the `CallToolResult`
the call would have returned: it polls `tasks/get` (honouring the server's `pollIntervalMs`, clamped to
`POLL_FLOOR`..`POLL_CEILING` seconds, with `Mcp-Name` carrying the task id), reports each poll's status message as
progress, answers input requests through the session's own elicitation, sampling and roots callbacks (the ones a
push request or an `InputRequiredResult` reaches) with `tasks/update`, and sends a best-effort `tasks/cancel` when
the caller gives up (its call is cancelled, or answering fails) before the task ended.

A completed task gives its inlined result (a tool error is `completed` with `isError`), a failed one its JSON-RPC
error as `MCPError`, one the server cancelled an `isError` result saying so.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Generator, Sequence
from typing import Any, Final, Literal

import anyio
from mcp import ClientSession, MCPError, types
from mcp.client.context import ClientRequestContext
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.shared.dispatcher import ProgressFnT
from pydantic import BaseModel, ConfigDict

from gateway.tasks.wire import (
    TASKS_CANCEL,
    TASKS_EXTENSION,
    TASKS_GET,
    TASKS_UPDATE,
    CancelTaskParams,
    CreateTaskResult,
    DetailedTask,
    GetTaskParams,
    TaskAck,
    UpdateTaskParams,
)

__all__ = [
    "POLL_CEILING",
    "POLL_FLOOR",
    "ClaimedTask",
    "TaskStarted",
    "TasksExtension",
    "deferring",
    "finish_claimed_tasks",
    "finish_task",
    "poll_interval",
    "reporting_progress",
    "task_request",
]

logger = logging.getLogger(__name__)

POLL_FLOOR: Final = 0.1
"""The shortest wait between two polls, in seconds, whatever the server suggests."""
POLL_CEILING: Final = 30.0
"""The longest wait between two polls, in seconds, whatever the server suggests."""
_DEFAULT_POLL: Final = 1.0

_CANCEL_DEADLINE: Final = 5.0

_progress: contextvars.ContextVar[tuple[ProgressFnT | None, types.RequestParamsMeta | None]] = contextvars.ContextVar(
    "adk_mcp_gateway_task_call", default=(None, None)
)
_deferred: contextvars.ContextVar[bool] = contextvars.ContextVar("adk_mcp_gateway_task_deferred", default=False)


class TaskStarted(Exception):
    """Raised out of a call made inside `deferring()` that the server answered with a task (not finished here)."""

    def __init__(self, task: CreateTaskResult) -> None:
        super().__init__(task.task_id)
        self.task = task


class _Answer(BaseModel):
    """A tasks method's answer, every field as sent."""

    model_config = ConfigDict(extra="allow")


class ClaimedTask(CreateTaskResult, types.Result):
    """A `CreateTaskResult` as the SDK's result claims want it (a subclass of `mcp.types.Result`)."""


class _GetTask(types.Request[GetTaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = TASKS_GET
    name_param = "taskId"


class _UpdateTask(types.Request[UpdateTaskParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = TASKS_UPDATE
    name_param = "taskId"


class _CancelTask(types.Request[CancelTaskParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = TASKS_CANCEL
    name_param = "taskId"


def poll_interval(poll_interval_ms: int | None, previous: float = _DEFAULT_POLL) -> float:
    """Seconds to wait before the next poll: the server's suggestion clamped, else the last wait."""
    if poll_interval_ms is None:
        return previous
    return min(max(poll_interval_ms / 1000, POLL_FLOOR), POLL_CEILING)


@contextlib.contextmanager
def deferring() -> Generator[None]:
    """A call inside that the server answers with a task raises `TaskStarted` instead of polling it to its end."""
    token = _deferred.set(True)
    try:
        yield
    finally:
        _deferred.reset(token)


@contextlib.contextmanager
def reporting_progress(on_progress: ProgressFnT | None, meta: types.RequestParamsMeta | None = None) -> Generator[None]:
    """A task a call inside finishes reports its polls to `on_progress`, and its requests carry `meta` as the call
    did (an upstream session's key: the task is that session's). The claim's resolver has no other way to reach
    the call's progress callback and `_meta`."""
    token = _progress.set((on_progress, meta))
    try:
        yield
    finally:
        _progress.reset(token)


async def finish_task(
    session: ClientSession,
    task_id: str,
    *,
    poll_interval_ms: int | None = None,
    on_progress: ProgressFnT | None = None,
    meta: types.RequestParamsMeta | None = None,
) -> types.CallToolResult:
    """Poll task `task_id` until it ends; its outcome as the `tools/call` result it stands for.

    `poll_interval_ms` is the server's suggestion from the task's creation; `meta` the `_meta` the call carried
    (every tasks request carries it too: a server may hold the task for the session a `_meta` key names).

    Raises:
        MCPError: the task failed (its JSON-RPC error), a poll failed, or an input callback refused (`ErrorData`).
    """
    wait = poll_interval(poll_interval_ms)
    answered: set[str] = set()
    polls = 0
    ended = False
    try:
        while True:
            await anyio.sleep(wait)
            task = await session.send_request(_GetTask(params=GetTaskParams(task_id=task_id, _meta=meta)), DetailedTask)
            polls += 1
            wait = poll_interval(task.poll_interval_ms, wait)
            if task.terminal:
                ended = True
                return _outcome(task)
            if on_progress is not None:
                await on_progress(float(polls), None, task.status_message or task.status)
            if task.status == "input_required" and task.input_requests:
                fresh = {key: request for key, request in task.input_requests.items() if key not in answered}
                if fresh:
                    await _answer(session, task_id, fresh, meta)
                    answered.update(fresh)
    finally:
        if not ended:
            await _cancel(session, task_id, meta)


def _outcome(task: DetailedTask) -> types.CallToolResult:
    if task.status == "completed":
        result = task.call_result()
        if result is None:
            raise MCPError(types.INTERNAL_ERROR, f"Task {task.task_id!r} completed without a result.")
        return result
    if task.status == "failed":
        error = task.error_data()
        if error is None:
            raise MCPError(types.INTERNAL_ERROR, f"Task {task.task_id!r} failed: {task.status_message or 'no error'}")
        raise MCPError.from_error_data(error)
    why = f": {task.status_message}" if task.status_message else "."
    return types.CallToolResult(content=[types.TextContent(text=f"The server cancelled the task{why}")], is_error=True)


async def task_request(
    session: ClientSession,
    method: str,
    task_id: str,
    *,
    input_responses: dict[str, Any] | None = None,
    meta: types.RequestParamsMeta | None = None,
) -> dict[str, Any]:
    """Send `tasks/get`, `tasks/update` (with `input_responses`) or `tasks/cancel` for `task_id`; the answer as sent.

    Raises:
        MCPError: the server answered with a JSON-RPC error (an unknown task, a missing capability).
        ValueError: `method` is not one of the three.
    """
    request: types.Request[Any, Any]
    if method == TASKS_GET:
        request = _GetTask(params=GetTaskParams(task_id=task_id, _meta=meta))
    elif method == TASKS_UPDATE:
        request = _UpdateTask(
            params=UpdateTaskParams(task_id=task_id, input_responses=input_responses or {}, _meta=meta)
        )
    elif method == TASKS_CANCEL:
        request = _CancelTask(params=CancelTaskParams(task_id=task_id, _meta=meta))
    else:
        raise ValueError(f"{method!r} is not a tasks method")
    return (await session.send_request(request, _Answer)).model_dump()


async def _answer(
    session: ClientSession, task_id: str, requests: dict[str, Any], meta: types.RequestParamsMeta | None
) -> None:
    """Answer input requests through the session's callbacks, then send the answers with `tasks/update`."""
    parsed = types.InputRequiredResult.model_validate(
        {"resultType": "input_required", "inputRequests": requests}, by_name=False
    ).input_requests
    responses: dict[str, Any] = {}
    for key, request in (parsed or {}).items():
        meta = request.params.meta if request.params is not None else None
        context = ClientRequestContext(session=session, request_id=key, meta=meta)
        response = await session.dispatch_input_request(context, request)
        if isinstance(response, types.ErrorData):
            raise MCPError.from_error_data(response)
        responses[key] = response.model_dump(by_alias=True, mode="json", exclude_none=True)
    params = UpdateTaskParams(task_id=task_id, input_responses=responses, _meta=meta)
    await session.send_request(_UpdateTask(params=params), TaskAck)


async def _cancel(session: ClientSession, task_id: str, meta: types.RequestParamsMeta | None) -> None:
    """Ask the server to cancel an unfinished task; a failure to is logged, never raised (best effort)."""
    with anyio.move_on_after(_CANCEL_DEADLINE, shield=True):
        try:
            await session.send_request(_CancelTask(params=CancelTaskParams(task_id=task_id, _meta=meta)), TaskAck)
        except Exception as exc:  # noqa: BLE001 - best effort: the caller's own outcome matters more
            logger.debug("Cancelling task %s failed: %s", task_id, exc)


def finish_claimed_tasks(session: ClientSession) -> None:
    """Make `session.call_tool` finish a task a call is answered with, unless its caller takes claimed results.

    `mcp.Client.call_tool` finishes one through the claim's resolver; a call sent on the session itself (a relayed
    round, which takes `InputRequiredResult`s as they are) would otherwise raise `UnexpectedClaimedResult`. The SDK
    has no hook for it, so the session's bound `call_tool` is wrapped (once, when the session is built).
    """
    send = session.call_tool

    async def call_tool(
        name: str,
        arguments: dict[str, Any] | None = None,
        read_timeout_seconds: float | None = None,
        progress_callback: ProgressFnT | None = None,
        *,
        allow_claimed: bool = False,
        **options: Any,
    ) -> Any:
        outcome = await send(name, arguments, read_timeout_seconds, progress_callback, allow_claimed=True, **options)
        if isinstance(outcome, ClaimedTask) and not allow_claimed:
            return await finish_task(
                session,
                outcome.task_id,
                poll_interval_ms=outcome.poll_interval_ms,
                on_progress=progress_callback,
                meta=options.get("meta"),
            )
        return outcome

    session.call_tool = call_tool  # pyright: ignore[reportAttributeAccessIssue]


async def _resolve(created: ClaimedTask, context: ClaimContext) -> types.CallToolResult:
    if _deferred.get():
        raise TaskStarted(created)
    on_progress, meta = _progress.get()
    return await finish_task(
        context.session, created.task_id, poll_interval_ms=created.poll_interval_ms, on_progress=on_progress, meta=meta
    )


class TasksExtension(ClientExtension):
    """Declares the Tasks extension and finishes the tasks `tools/call` answers with (`finish_task`)."""

    identifier = TASKS_EXTENSION

    def claims(self) -> Sequence[ResultClaim[Any]]:
        """The `resultType: "task"` answer of `tools/call`."""
        return (ResultClaim(result_type="task", model=ClaimedTask, resolve=_resolve),)
