"""A small test-only MCP server speaking the Tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`) by hand.

It answers a `tools/call` from a client that declared the extension (in the request's per-request capabilities)
with a `CreateTaskResult`, and serves `tasks/get`, `tasks/update` and `tasks/cancel` from a dict. A client that did
not declare it gets the tool's result at once (`slow_add`) or `-32021` (the other tools). What the client sent is
kept in `TaskLog` for the tests to read. Tasks advance only when polled, so no test depends on timing:

* `slow_add(a, b)`: `working` for `polls` polls, then `completed` with the sum (text and `structuredContent`).
* `ask_name()`: `input_required` with a form elicitation; a `tasks/update` answering it completes with a greeting.
* `endless()`: `working` until cancelled.
* `broken()`: `failed` with a JSON-RPC error on its first poll.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp import MCPError, types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.types import CLIENT_CAPABILITIES_META_KEY
from pydantic import ConfigDict, Field
from starlette.applications import Starlette

from gateway.tasks.wire import missing_tasks_capability

TASKS = "io.modelcontextprotocol/tasks"
_NOW = "2026-11-27T10:00:00Z"
_TOOL_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}
_ADD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
}
_NAME_FORM: dict[str, Any] = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


class TaskParams(types.RequestParams):
    """`tasks/get` and `tasks/cancel` params (and `tasks/update`'s answers)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    task_id: str = Field(alias="taskId")
    input_responses: dict[str, Any] | None = Field(default=None, alias="inputResponses")


@dataclass
class Task:
    """One task and how far it got."""

    task_id: str
    tool: str
    arguments: dict[str, Any]
    status: str = "working"
    polls_left: int = 0
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = None

    def wire(self, poll_interval_ms: int) -> dict[str, Any]:
        task: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": _NOW,
            "lastUpdatedAt": _NOW,
            "ttlMs": 60_000,
            "pollIntervalMs": poll_interval_ms,
        }
        if self.status == "completed":
            task["result"] = self.result
        if self.status == "failed":
            task["error"] = self.error
        if self.status == "input_required":
            task["inputRequests"] = self.input_requests
        return task


@dataclass
class TaskLog:
    """What clients sent: task calls, polls (with their `Mcp-Name` header), updates and cancellations."""

    tasks: dict[str, Task] = field(default_factory=dict[str, Task])
    polls: list[tuple[str, str | None]] = field(default_factory=list[tuple[str, str | None]])
    updates: list[tuple[str, dict[str, Any]]] = field(default_factory=list[tuple[str, dict[str, Any]]])
    cancelled: list[str] = field(default_factory=list[str])
    plain_calls: list[str] = field(default_factory=list[str])
    cancel_seen: anyio.Event = field(default_factory=anyio.Event)
    first_poll: anyio.Event = field(default_factory=anyio.Event)


def _declares_tasks(params: types.CallToolRequestParams) -> bool:
    meta: dict[str, Any] = dict(params.meta or {})
    capabilities: Any = meta.get(CLIENT_CAPABILITIES_META_KEY) or {}
    extensions: Any = capabilities.get("extensions") if isinstance(capabilities, dict) else None
    return isinstance(extensions, dict) and TASKS in extensions


def _header(ctx: ServerRequestContext[Any, Any], name: str) -> str | None:
    request: Any = ctx.request
    headers: Any = getattr(request, "headers", None)
    return None if headers is None else headers.get(name)


def _text(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": False}


def build(log: TaskLog, *, polls: int = 2, poll_interval_ms: int = 0) -> Server[Any]:
    """The server; `polls` is how many polls `slow_add` stays `working`."""
    ids = itertools.count(1)

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        del ctx, params
        tools = [
            types.Tool(name="slow_add", description="Add slowly.", input_schema=_ADD_SCHEMA),
            types.Tool(name="ask_name", description="Greet after asking.", input_schema=_TOOL_SCHEMA),
            types.Tool(name="endless", description="Never ends.", input_schema=_TOOL_SCHEMA),
            types.Tool(name="broken", description="Fails.", input_schema=_TOOL_SCHEMA),
        ]
        for tool in tools:
            tool.execution = types.ToolExecution(task_support="optional")
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
        del ctx
        arguments = dict(params.arguments or {})
        if not _declares_tasks(params):
            log.plain_calls.append(params.name)
            if params.name == "slow_add":
                total = int(arguments["a"]) + int(arguments["b"])
                return types.CallToolResult(content=[types.TextContent(text=str(total))])
            raise missing_tasks_capability(f"the tool {params.name!r}")
        task = Task(task_id=f"task-{next(ids)}", tool=params.name, arguments=arguments, polls_left=polls)
        if params.name == "ask_name":
            task.status = "input_required"
            form = {"mode": "form", "message": "What is your name?", "requestedSchema": _NAME_FORM}
            task.input_requests = {"name-1": {"method": "elicitation/create", "params": form}}
        log.tasks[task.task_id] = task
        return {"resultType": "task", **task.wire(poll_interval_ms)}

    def _task(params: TaskParams) -> Task:
        task = log.tasks.get(params.task_id)
        if task is None:
            raise MCPError(types.INVALID_PARAMS, f"Failed to retrieve task: no task {params.task_id!r}")
        return task

    async def get_task(ctx: ServerRequestContext[Any, Any], params: TaskParams) -> dict[str, Any]:
        log.polls.append((params.task_id, _header(ctx, "mcp-name")))
        log.first_poll.set()
        task = _task(params)
        if task.status == "working" and task.tool == "slow_add":
            if task.polls_left > 0:
                task.polls_left -= 1
            else:
                total = int(task.arguments["a"]) + int(task.arguments["b"])
                task.status, task.result = "completed", {**_text(str(total)), "structuredContent": {"sum": total}}
        elif task.status == "working" and task.tool == "broken":
            task.status, task.error = "failed", {"code": types.INTERNAL_ERROR, "message": "the job broke"}
        return task.wire(poll_interval_ms)

    async def update_task(ctx: ServerRequestContext[Any, Any], params: TaskParams) -> dict[str, Any]:
        del ctx
        task = _task(params)
        answers = dict(params.input_responses or {})
        log.updates.append((params.task_id, answers))
        answer: Any = answers.get("name-1")
        if task.status == "input_required" and isinstance(answer, dict):
            content: Any = answer.get("content") or {}
            if answer.get("action") == "accept":
                task.result = _text(f"Hello, {content.get('name')}!")
            else:
                task.result = {**_text(f"No name given ({answer.get('action')})."), "isError": True}
            task.status, task.input_requests = "completed", None
        return {}

    async def cancel_task(ctx: ServerRequestContext[Any, Any], params: TaskParams) -> dict[str, Any]:
        del ctx
        log.cancelled.append(params.task_id)
        log.cancel_seen.set()
        task = log.tasks.get(params.task_id)
        if task is not None and task.status in ("working", "input_required"):
            task.status = "cancelled"
        return {}

    server = Server("tasks-upstream", on_list_tools=list_tools, on_call_tool=call_tool)
    server.extensions[TASKS] = {}
    server.add_request_handler("tasks/get", TaskParams, get_task)
    server.add_request_handler("tasks/update", TaskParams, update_task)
    server.add_request_handler("tasks/cancel", TaskParams, cancel_task)
    return server


def http_app(log: TaskLog, **options: Any) -> Starlette:
    """The server's streamable HTTP app (at `/mcp`)."""
    return build(log, **options).streamable_http_app()
