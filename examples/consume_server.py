"""Connect to a published MCP server, list its tools as ADK-style declarations, and call one.

python examples/consume_server.py            # starts `mcp-server-time` (pip install mcp-server-time)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio

from gateway import McpToolset, StdioConnectionParams, ToolContext


def _time_server() -> StdioConnectionParams:
    # The server's console script sits next to this interpreter when both are installed in one virtualenv.
    installed = Path(sys.executable).with_name("mcp-server-time")
    command = str(installed) if installed.exists() else "mcp-server-time"
    return StdioConnectionParams(command=command, args=["--local-timezone", "UTC"], connect_timeout=30)


async def main() -> None:
    async with McpToolset(connection_params=_time_server(), tool_name_prefix="time") as toolset:
        tools = await toolset.get_tools_with_prefix()
        for tool in tools:
            declaration = tool.get_declaration()
            assert declaration is not None
            print(json.dumps(declaration.model_dump(exclude_none=True), indent=2))
        by_name = {tool.name: tool for tool in tools}
        response = await by_name["time_get_current_time"].run_async(
            args={"timezone": "Europe/Paris"}, tool_context=ToolContext()
        )
        print("time_get_current_time ->", json.dumps(response))


if __name__ == "__main__":
    anyio.run(main)
