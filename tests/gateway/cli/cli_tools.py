"""Local tools that ask their user things, for `adk-mcp-gateway call --tools tests/gateway/cli/cli_tools.py`."""

from __future__ import annotations

from typing import Any

from gateway import FunctionTool, ToolContext

__all__ = ["ask_profile", "boom", "chatty", "empty_bin_tool", "summarize", "visit"]


async def ask_profile(tool_context: ToolContext) -> dict[str, Any]:
    """Ask for a name, an age, a colour and whether to subscribe."""
    answer = await tool_context.elicit(
        "Tell me about you.",
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Name"},
                "age": {"type": "integer", "title": "Age"},
                "colour": {"type": "string", "enum": ["red", "green"], "default": "green"},
                "subscribe": {"type": "boolean", "default": False},
            },
            "required": ["name", "age"],
        },
    )
    return {"action": answer.action, "content": answer.content}


async def visit(tool_context: ToolContext) -> dict[str, Any]:
    """Send the user to a sign-in page."""
    answer = await tool_context.elicit_url("Sign in to continue.", "https://example.com/sign-in?x=1", "e-1")
    return {"action": answer.action}


async def summarize(text: str, tool_context: ToolContext) -> str:
    """Ask the client's model to summarise `text`."""
    reply = await tool_context.sample(f"Summarise: {text}", max_tokens=50)
    return getattr(reply.content, "text", "")


def boom() -> str:
    """Fail with a message."""
    raise ValueError("the widget is broken")


def chatty(text: str) -> str:
    """Print to stdout, then answer."""
    print("chatter from the tool")
    return text.upper()


def empty_bin() -> str:
    """Empty the bin (asks for confirmation first)."""
    return "emptied"


empty_bin_tool = FunctionTool(empty_bin, require_confirmation=True)
