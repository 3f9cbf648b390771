"""The example of docs/serving/functions.md, runnable: `python examples/quickstart.py`."""

from __future__ import annotations

import json
from typing import Annotated, Any

import anyio
from pydantic import Field

from adapters import declaration_to_mcp_tool
from gateway import FunctionTool, ToolContext


def add_item(name: str, qty: Annotated[int, Field(ge=1)] = 1, *, tool_context: ToolContext) -> dict[str, Any]:
    """Add an item to the cart.

    Args:
        name: what to add.
        qty: how many.
    """
    cart = tool_context.state.setdefault("cart", [])
    cart.append({"name": name, "qty": qty})
    return {"items": len(cart)}


async def main() -> None:
    tool = FunctionTool(add_item, require_confirmation=lambda qty: qty > 10)
    declaration = tool.get_declaration()
    assert declaration is not None
    mcp_tool = declaration_to_mcp_tool(declaration, destructive=True)
    print(json.dumps(mcp_tool.model_dump(by_alias=True, mode="json", exclude_none=True), indent=2))

    context = ToolContext()
    print(await tool.run_async(args={"name": "tea", "qty": "2"}, tool_context=context))
    print(await tool.run_async(args={"qty": 2}, tool_context=context))
    print(await tool.run_async(args={"name": "tea", "qty": 50}, tool_context=context))
    print(context.actions.requested_tool_confirmations)
    print(context.actions.state_delta)


if __name__ == "__main__":
    anyio.run(main)
