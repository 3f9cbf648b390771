"""Tools written with google-adk's own classes, served over MCP by the gateway.

adk-mcp-gateway serve --tools examples/adk_tools.py     # needs the adk extra: pip install "adk-mcp-gateway[adk]"

Each tool runs through its own `run_async` with a real google-adk `ToolContext`: `tool_context.state` is the MCP
session's state (kept in the gateway's SQLite store, so it survives a restart), and `delete_notes`, which requires
confirmation, asks the MCP client's user through elicitation first. A function wrapped by a tool object here is
published once, through its tool object.
"""

from __future__ import annotations

from typing import Any

from google.adk.tools import FunctionTool, ToolContext


def get_weather(city: str) -> dict[str, Any]:
    """Today's weather for a city (made up, so that the example needs no network)."""
    return {"city": city, "forecast": "sunny", "celsius": 21}


def take_note(topic: str, text: str, tool_context: ToolContext) -> dict[str, Any]:
    """Write a note about a topic, kept in this session."""
    notes = dict(tool_context.state.get("notes", {}))
    notes[topic] = text
    tool_context.state["notes"] = notes
    tool_context.state["user:notes_written"] = tool_context.state.get("user:notes_written", 0) + 1
    return {"topics": sorted(notes)}


def delete_notes(topic: str, tool_context: ToolContext) -> dict[str, Any]:
    """Delete the note about a topic."""
    notes = dict(tool_context.state.get("notes", {}))
    existed = notes.pop(topic, None) is not None
    tool_context.state["notes"] = notes
    return {"deleted": topic, "existed": existed}


weather_tool = FunctionTool(get_weather)
take_note_tool = FunctionTool(take_note)
delete_notes_tool = FunctionTool(delete_notes, require_confirmation=True)
