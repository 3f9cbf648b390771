"""Server mode: local tools published as an MCP server over stdio, SSE and streamable HTTP."""

from gateway.server.http.app import create_app
from gateway.server.identity import SESSION_META_KEY
from gateway.server.serve import serve, serve_async
from gateway.server.tool_server import ToolServer

__all__ = ["SESSION_META_KEY", "ToolServer", "create_app", "serve", "serve_async"]
