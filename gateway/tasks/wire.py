"""The Tasks extension's wire (SEP-2663, `io.modelcontextprotocol/tasks`, spec 2026-07-28): names, codes and models.

A server that advertises the extension under `capabilities.extensions` may answer a `tools/call` of a client that
declared it (for the whole session, or for one request in `_meta`) with a flat `CreateTaskResult`
(`resultType: "task"` beside the task's fields). The client then polls `tasks/get` (a `DetailedTask`: the result
or the JSON-RPC error inlined once terminal, the outstanding `inputRequests` while `input_required`), answers
input requests with `tasks/update` (MRTR's `inputResponses`) and may `tasks/cancel`; both acks are an empty
`resultType: "complete"` result. A tool error is `completed` with `result.isError`; `failed` is for JSON-RPC errors
only. The tasks methods of a client that did not declare the extension get `-32021`.

Models take either spelling and dump the wire's (`wire()`); unknown fields are kept, so a gateway passes on what a
newer server adds.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final, Literal, cast, get_args

from mcp import MCPError, types
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

__all__ = [
    "CLIENT_CAPABILITIES_META_KEY",
    "MISSING_REQUIRED_CLIENT_CAPABILITY",
    "TASKS_CANCEL",
    "TASKS_EXTENSION",
    "TASKS_GET",
    "TASKS_METHODS",
    "TASKS_UPDATE",
    "TASK_STATUSES",
    "TERMINAL_STATUSES",
    "CancelTaskParams",
    "CreateTaskResult",
    "DetailedTask",
    "GetTaskParams",
    "TaskAck",
    "TaskFields",
    "TaskStatus",
    "TaskSupport",
    "UpdateTaskParams",
    "declares_tasks",
    "iso_timestamp",
    "missing_tasks_capability",
    "required_capabilities",
    "task_support",
]

TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
"""The extension's identifier: a key of `capabilities.extensions` on both sides."""

CLIENT_CAPABILITIES_META_KEY: Final = "io.modelcontextprotocol/clientCapabilities"
"""The request `_meta` key a modern-era client declares its capabilities under (per request)."""

MISSING_REQUIRED_CLIENT_CAPABILITY: Final = -32021
"""The JSON-RPC error of a tasks method (or a task-requiring tool) from a client that did not declare the extension."""

TASKS_GET: Final = "tasks/get"
TASKS_UPDATE: Final = "tasks/update"
TASKS_CANCEL: Final = "tasks/cancel"
TASKS_METHODS: Final = (TASKS_GET, TASKS_UPDATE, TASKS_CANCEL)
"""The extension's request methods; `tasks/result` and `tasks/list` of the 2025-11-25 draft are gone (-32601)."""

TaskStatus = Literal["working", "input_required", "completed", "cancelled", "failed"]
TASK_STATUSES: Final[tuple[TaskStatus, ...]] = get_args(TaskStatus)
TERMINAL_STATUSES: Final[frozenset[TaskStatus]] = frozenset({"completed", "cancelled", "failed"})

TaskSupport = Literal["forbidden", "optional", "required"]
"""A tool's `execution.taskSupport`: never a task, a task when the client declared the extension, always a task."""


class _Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    def wire(self) -> dict[str, Any]:
        """The JSON object on the wire (camelCase keys, absent fields left out)."""
        return self.model_dump(by_alias=True, mode="json", exclude_none=True)


class TaskFields(_Wire):
    """The fields every shape of a task carries (SEP-2663's `Task`).

    `ttl_ms` is sent even when None (null: the server keeps the task as long as it likes).
    """

    task_id: str
    status: TaskStatus
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None

    def wire(self) -> dict[str, Any]:
        return {**super().wire(), "ttlMs": self.ttl_ms}

    @property
    def terminal(self) -> bool:
        """Whether the task has ended (completed, cancelled or failed)."""
        return self.status in TERMINAL_STATUSES


class CreateTaskResult(TaskFields):
    """A `tools/call` answered with a task handle: the task's seed state, flat, `resultType: "task"`."""

    result_type: Literal["task"] = "task"
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class DetailedTask(TaskFields):
    """A `tasks/get` answer (and a `notifications/tasks` body): the task with what its status carries.

    `input_requests` (status `input_required`): the outstanding server-to-client requests by key, each a JSON
    request object (`{"method": "elicitation/create", "params": {...}}`). `result` (`completed`): the original
    request's result, e.g. a `CallToolResult` as JSON. `error` (`failed`): the JSON-RPC error (`code`, `message`,
    `data`).
    """

    result_type: Literal["complete"] = "complete"
    input_requests: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")

    def call_result(self) -> types.CallToolResult | None:
        """The inlined result as a `CallToolResult` (a completed `tools/call` task), else None."""
        return None if self.result is None else types.CallToolResult.model_validate(self.result)

    def error_data(self) -> types.ErrorData | None:
        """The inlined JSON-RPC error (a failed task), else None."""
        return None if self.error is None else types.ErrorData.model_validate(self.error)


class TaskAck(_Wire):
    """The empty acknowledgement of `tasks/update` and `tasks/cancel`."""

    result_type: Literal["complete"] = "complete"


class GetTaskParams(types.RequestParams):
    """`tasks/get` params."""

    task_id: str


class CancelTaskParams(types.RequestParams):
    """`tasks/cancel` params."""

    task_id: str


class UpdateTaskParams(types.RequestParams):
    """`tasks/update` params: answers to outstanding input requests, keyed as `inputRequests` named them."""

    task_id: str
    input_responses: dict[str, Any]


def iso_timestamp(moment: float) -> str:
    """`moment` (a `time.time()`) as the ISO 8601 UTC text tasks carry (`2026-07-28T10:30:00.123Z`)."""
    text = datetime.fromtimestamp(moment, UTC).isoformat(timespec="milliseconds")
    return text.removesuffix("+00:00") + "Z"


def _extensions_of(capabilities: object) -> Mapping[str, Any] | None:
    if isinstance(capabilities, types.ClientCapabilities):
        return capabilities.extensions
    if isinstance(capabilities, Mapping):
        extensions = cast("Mapping[str, Any]", capabilities).get("extensions")
        if isinstance(extensions, Mapping):
            return cast("Mapping[str, Any]", extensions)
    return None


def declares_tasks(capabilities: types.ClientCapabilities | Mapping[str, Any] | None) -> bool:
    """Whether client capabilities (a session's, or one request's `_meta` entry) declare the extension."""
    extensions = _extensions_of(capabilities)
    return extensions is not None and TASKS_EXTENSION in extensions


def required_capabilities() -> dict[str, Any]:
    """The `data` of a `-32021` error naming the extension."""
    return {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}


def missing_tasks_capability(what: str) -> MCPError:
    """The `-32021` error for `what` (a tasks method, a tool that runs only as a task) asked without the extension."""
    return MCPError(
        code=MISSING_REQUIRED_CLIENT_CAPABILITY,
        message=f"Missing required client capability: {what} needs the {TASKS_EXTENSION} extension; declare it "
        "under capabilities.extensions.",
        data=required_capabilities(),
    )


def task_support(tool: types.Tool) -> TaskSupport:
    """A listed tool's `execution.taskSupport` (`forbidden` when it says nothing)."""
    execution = tool.execution
    return "forbidden" if execution is None or execution.task_support is None else execution.task_support
