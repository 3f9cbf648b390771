"""An SDK `MCPServer` upstream (stdio) whose one tool says what trace context its request's `_meta` carried."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("trace-upstream", log_level="WARNING")


@server.tool()
def trace_context(ctx: Context) -> dict[str, Any]:
    """The `traceparent` and `tracestate` of this request's `params._meta` (None when absent)."""
    meta: Any = ctx.request_context.meta or {}
    return {"traceparent": meta.get("traceparent"), "tracestate": meta.get("tracestate")}


if __name__ == "__main__":
    server.run()
