"""adk-mcp-gateway: ADK-style tools and the Model Context Protocol, both ways."""

from gateway.errors import (
    ConfigError,
    GatewayError,
    NameConflictError,
    ServiceNotConfiguredError,
    ToolDefinitionError,
    ToolNotFoundError,
    UpstreamProtocolError,
    UpstreamUnavailableError,
)
from gateway.tools import (
    ArtifactService,
    BaseTool,
    BaseToolset,
    ClientFeatures,
    EventActions,
    FunctionTool,
    InMemoryArtifactService,
    LongRunningFunctionTool,
    ReadonlyContext,
    State,
    ToolConfirmation,
    ToolContext,
    ToolPredicate,
)
from gateway.tools.tool_union import ToolUnion, as_tool

__all__ = [
    "ArtifactService",
    "BaseTool",
    "BaseToolset",
    "ClientFeatures",
    "ConfigError",
    "EventActions",
    "FunctionTool",
    "GatewayError",
    "InMemoryArtifactService",
    "LongRunningFunctionTool",
    "NameConflictError",
    "ReadonlyContext",
    "ServiceNotConfiguredError",
    "State",
    "ToolConfirmation",
    "ToolContext",
    "ToolDefinitionError",
    "ToolNotFoundError",
    "ToolPredicate",
    "ToolUnion",
    "UpstreamProtocolError",
    "UpstreamUnavailableError",
    "as_tool",
]
