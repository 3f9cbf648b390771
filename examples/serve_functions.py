"""Serve the example functions as an MCP server from Python (the same as `adk-mcp-gateway serve`).

    python examples/serve_functions.py                  # stdio, for Claude Desktop
    python examples/serve_functions.py http 8000        # streamable HTTP on http://127.0.0.1:8000/mcp

Try the HTTP server with the MCP Inspector's CLI:

    npx @modelcontextprotocol/inspector@2.12.0 --cli http://127.0.0.1:8000/mcp --transport http --method tools/list
"""

from __future__ import annotations

import sys
from pathlib import Path

from gateway import FunctionTool
from gateway.server import serve
from gateway.state import SqliteStateStore

sys.path.insert(0, str(Path(__file__).resolve().parent))

from functions import convert_temperature, count_words_tool, days_between, remember


def forget(tool_context: object) -> str:
    """Forget every note of this session (asks you first)."""
    tool_context.state["notes"] = []  # type: ignore[attr-defined]
    return "forgotten"


TOOLS = [convert_temperature, count_words_tool, days_between, remember, FunctionTool(forget, require_confirmation=True)]


def main(argv: list[str]) -> None:
    transport = argv[1] if len(argv) > 1 else "stdio"
    port = int(argv[2]) if len(argv) > 2 else 8000
    state = Path(argv[3]) if len(argv) > 3 else Path.home() / ".local/state/adk-mcp-gateway/examples.db"
    serve(TOOLS, name="examples", transport=transport, port=port, state_store=SqliteStateStore(state))


if __name__ == "__main__":
    main(sys.argv)
