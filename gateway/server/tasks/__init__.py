"""Serving tools as MCP Tasks (SEP-2663): a long-running tool's call becomes a task its client polls, answers and
cancels (`gateway.server.tasks.served_tasks`); the wire and the stored records live in `gateway.tasks`."""

from gateway.server.tasks.served_tasks import ForeignTasks, ServedTasks, TaskParams
from gateway.server.tasks.task_features import TaskFeatures
from gateway.server.tasks.task_job import TaskSettings

__all__ = ["ForeignTasks", "ServedTasks", "TaskFeatures", "TaskParams", "TaskSettings"]
