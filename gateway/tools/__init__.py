"""ADK-style tools: the function tool model and the context a tool runs with."""

from gateway.tools.actions import EventActions, ToolConfirmation
from gateway.tools.artifacts import ArtifactService, InMemoryArtifactService
from gateway.tools.base_tool import BaseTool
from gateway.tools.base_toolset import BaseToolset, ToolPredicate
from gateway.tools.context import ClientFeatures, ProgressLog, ProgressSink, ReadonlyContext, ToolContext
from gateway.tools.function_tool import FunctionTool
from gateway.tools.long_running_tool import LongRunningFunctionTool
from gateway.tools.state import State

__all__ = [
    "ArtifactService",
    "BaseTool",
    "BaseToolset",
    "ClientFeatures",
    "EventActions",
    "FunctionTool",
    "InMemoryArtifactService",
    "LongRunningFunctionTool",
    "ProgressLog",
    "ProgressSink",
    "ReadonlyContext",
    "State",
    "ToolConfirmation",
    "ToolContext",
    "ToolPredicate",
]
