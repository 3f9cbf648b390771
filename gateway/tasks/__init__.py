"""MCP Tasks (SEP-2663, `io.modelcontextprotocol/tasks`): the extension's wire, and the runtime that serves
long-running tools as tasks."""

from gateway.tasks.wire import (
    TASKS_EXTENSION,
    CreateTaskResult,
    DetailedTask,
    TaskAck,
    TaskStatus,
    TaskSupport,
    declares_tasks,
)

__all__ = [
    "TASKS_EXTENSION",
    "CreateTaskResult",
    "DetailedTask",
    "TaskAck",
    "TaskStatus",
    "TaskSupport",
    "declares_tasks",
]
