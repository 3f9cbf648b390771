"""Tools that set `EventActions`, written so that our `FunctionTool` and google-adk's both take them.

The context parameter is found by its name `tool_context` by both, so the same function runs in-process as a native
google-adk tool, lent through `to_adk`, and served over MCP by `serve --tools`.
"""

from __future__ import annotations

from typing import Any

SUPPORT_AGENT = "support"


def hand_off(topic: str, tool_context: Any) -> dict[str, str]:
    """Hand the conversation to the support agent."""
    tool_context.actions.transfer_to_agent = SUPPORT_AGENT
    return {"handed_off": topic}


def give_up(reason: str, tool_context: Any) -> dict[str, str]:
    """Stop working on the task and hand it back to the caller."""
    tool_context.actions.escalate = True
    return {"gave_up": reason}


def show_report(tool_context: Any) -> dict[str, str]:
    """Show the report to the user as it is."""
    tool_context.actions.skip_summarization = True
    return {"report": "all green"}


def note_directly(note: str, tool_context: Any) -> dict[str, str]:
    """Record a note through the actions' state delta, as ADK's docs show."""
    tool_context.actions.state_delta["notes"] = [*tool_context.state.get("notes", []), note]
    return {"noted": note}


def try_hard(tool_context: Any) -> dict[str, str]:
    """Count an attempt, then fail."""
    tool_context.state["tries"] = tool_context.state.get("tries", 0) + 1
    return {"error": "It did not work this time."}


def read_notes(tool_context: Any) -> dict[str, Any]:
    """What the session holds."""
    return {"notes": tool_context.state.get("notes"), "tries": tool_context.state.get("tries")}
