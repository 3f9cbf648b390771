"""Tools whose confirmations carry payloads or hints, served in-process and by a `serve` child over stdio."""

from __future__ import annotations

from typing import Any

from gateway.tools import FunctionTool, ToolContext


def pay(amount: int, tool_context: ToolContext) -> dict[str, Any]:
    """Pay someone, after the user confirmed (and perhaps edited) the payment's details."""
    confirmation = tool_context.tool_confirmation
    if confirmation is None:
        tool_context.request_confirmation(
            hint="Check the payment.", payload={"amount": amount, "to": "bob", "rate": 1.5, "urgent": False}
        )
        return {"status": "awaiting confirmation"}
    if not confirmation.confirmed:
        return {"error": "The payment was rejected."}
    return {"paid": confirmation.payload}


def ship(tool_context: ToolContext) -> dict[str, Any]:
    """Ship a parcel whose confirmation payload is nested (no flat form can hold it)."""
    confirmation = tool_context.tool_confirmation
    if confirmation is None:
        tool_context.request_confirmation(
            hint="Check the parcel.", payload={"items": ["a", "b"], "to": {"city": "Oslo"}}
        )
        return {"status": "awaiting confirmation"}
    return {"shipped": confirmation.payload}


def delete_file(path: str) -> str:
    """Delete a file (pretend)."""
    return f"deleted {path}"


delete_file_tool = FunctionTool(
    delete_file, require_confirmation=True, confirmation_hint=lambda args: f"Delete {args['path']}?"
)

TOOLS: list[Any] = [pay, ship, delete_file_tool]
