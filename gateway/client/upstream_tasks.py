"""`UpstreamTasks`: an upstream's tasks (SEP-2663) started and finished apart, through the toolset's session pool.

A part of `McpToolset`. With `enable_tasks`, `call_tool` finishes a task the upstream answers with before it returns
(`gateway.client.task_consumer`); `start_tool` instead returns the task handle at once, and `finish_task` waits for
that task's outcome later, from any task (the form ADK's long-running tools take: a pending status first, the
final result afterwards).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from mcp import types
from mcp.client.extension import ClientExtension

from gateway.client.sessions.pool import SessionPool
from gateway.client.sessions.slot import SessionSlot
from gateway.client.sessions.upstream_session import ClientCallbacks, UpstreamSession
from gateway.client.task_consumer import (
    TasksExtension,
    TaskStarted,
    deferring,
    finish_task,
    reporting_progress,
    task_request,
)
from gateway.tasks.wire import CreateTaskResult
from gateway.tools import ReadonlyContext, ToolContext

if TYPE_CHECKING:
    from gateway.client.tool_caller import ToolCaller

__all__ = ["UpstreamTasks", "reporting_progress", "task_extensions"]


def task_extensions(enable_tasks: bool) -> tuple[ClientExtension, ...]:
    """The SDK client extensions a toolset's sessions are built with."""
    return (TasksExtension(),) if enable_tasks else ()


class UpstreamTasks:
    """Tasks of the upstream that `_pool` reaches (its sessions built with `_callbacks.extensions`)."""

    _pool: SessionPool
    _callbacks: ClientCallbacks

    @property
    def tasks_enabled(self) -> bool:
        """Whether the toolset declares the Tasks extension to its (modern) upstream sessions."""
        return any(isinstance(extension, TasksExtension) for extension in self._callbacks.extensions)

    def runs_as_task(self, tool: types.Tool) -> bool:
        """Whether a call of `tool` may be answered with a task: tasks are enabled and its listing does not forbid
        them (a 2026-07-28 listing says nothing of task support: there the server decides each call)."""
        execution = tool.execution
        return self.tasks_enabled and (execution is None or execution.task_support != "forbidden")

    async def start_tool(
        self, name: str, args: dict[str, Any], tool_context: ToolContext
    ) -> types.CallToolResult | CreateTaskResult:
        """`call_tool`, except that a task the upstream answers with is returned as it was created (not finished).

        Raises:
            As `call_tool`.
        """
        caller = cast("ToolCaller", self)  # the McpToolset this is a part of
        try:
            with deferring():
                return await caller.call_tool(name, args, tool_context)
        except TaskStarted as started:
            return started.task

    async def finish_task(
        self, task_id: str, readonly_context: ReadonlyContext | None = None, *, poll_interval_ms: int | None = None
    ) -> types.CallToolResult:
        """Wait for a task `start_tool` returned to end (polling on the context's session); its outcome.

        `poll_interval_ms`: the server's suggestion when it created the task, if known.

        Raises:
            MCPError: the task failed (its JSON-RPC error) or the upstream refused a poll (an unknown task).
            UpstreamUnavailableError: the upstream cannot be reached.
        """

        async def poll(slot: SessionSlot, session: UpstreamSession) -> types.CallToolResult:
            del slot
            return await finish_task(
                session.client.session, task_id, poll_interval_ms=poll_interval_ms, meta=session.meta
            )

        return await self._pool.request(readonly_context, f"Waiting for task {task_id!r}", poll)

    async def send_task_request(
        self,
        method: str,
        task_id: str,
        readonly_context: ReadonlyContext | None = None,
        *,
        input_responses: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Send `tasks/get`, `tasks/update` or `tasks/cancel` for one of the upstream's tasks on the context's
        session; the answer as the upstream sent it (what a gateway forwards).

        Raises:
            MCPError: the upstream answered with a JSON-RPC error (an unknown task, say).
            UpstreamUnavailableError: the upstream cannot be reached.
        """

        async def send(slot: SessionSlot, session: UpstreamSession) -> dict[str, Any]:
            del slot
            return await task_request(
                session.client.session, method, task_id, input_responses=input_responses, meta=session.meta
            )

        return await self._pool.request(readonly_context, f"{method} of task {task_id!r}", send)
