"""Client side: remote MCP servers as ADK-style tools (`McpToolset`)."""

from gateway.client.connection import SseConnectionParams, StdioConnectionParams, StreamableHTTPConnectionParams
from gateway.client.mcp_tool import McpTool
from gateway.client.toolset import McpToolset

MCPToolset = McpToolset
"""google-adk's other spelling of `McpToolset`."""

__all__ = [
    "MCPToolset",
    "McpTool",
    "McpToolset",
    "SseConnectionParams",
    "StdioConnectionParams",
    "StreamableHTTPConnectionParams",
]
