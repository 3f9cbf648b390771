"""An upstream with one resource, one resource template and one prompt (over stdio), for the listing tests."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("listing", log_level="WARNING")


@server.resource("memo://today")
def today() -> str:
    """Today's memo."""
    return "nothing planned"


@server.resource("memo://{day}")
def memo(day: str) -> str:
    """The memo of one day."""
    return f"nothing planned on {day}"


@server.prompt()
def plan(day: str) -> str:
    """Ask for a plan for one day."""
    return f"Plan {day}."


if __name__ == "__main__":
    server.run()
