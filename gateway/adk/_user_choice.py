"""google-adk's `get_user_choice` served over MCP: the MCP client's user picks one option from a form.

In an ADK app the tool returns nothing and the app answers the call later with the user's choice (it is a
long-running tool). An MCP client has no such later answer; the question it can be asked is an elicitation form with
one field whose values are the options (an enum), and the choice is the call's result, as the app's answer would be.
"""

from __future__ import annotations

from typing import Any, Final, cast

from google.adk.tools.base_tool import BaseTool as AdkBaseTool
from google.adk.tools.function_tool import FunctionTool as AdkFunctionTool
from google.adk.tools.get_user_choice_tool import get_user_choice

from gateway.tools import ToolContext

__all__ = ["CHOICE_FIELD", "ask_user_choice", "is_user_choice"]

CHOICE_FIELD: Final = "choice"


def is_user_choice(tool: AdkBaseTool) -> bool:
    """Whether `tool` is google-adk's `get_user_choice` (its `get_user_choice_tool`, or the function wrapped anew)."""
    return isinstance(tool, AdkFunctionTool) and tool.func is get_user_choice


async def ask_user_choice(args: dict[str, Any], context: ToolContext) -> dict[str, Any]:
    """Ask the client's user to pick one of `args["options"]`: `{"result": <the option>}`, or ADK's error dict.

    Raises:
        InputRequired: a modern-era client answers in the next round.
        ServiceNotConfiguredError: the client cannot be asked (says why).
    """
    given = args.get("options")
    options = [str(option) for option in cast("list[Any]", given)] if isinstance(given, list) else []
    if not options:
        return {"error": "get_user_choice needs a non-empty list of options to choose from."}
    form = {
        "type": "object",
        "properties": {CHOICE_FIELD: {"type": "string", "title": "Your choice", "enum": options}},
        "required": [CHOICE_FIELD],
    }
    answer = await context.elicit("Choose one of these options.", form)
    choice = (answer.content or {}).get(CHOICE_FIELD) if answer.action == "accept" else None
    if choice not in options:
        return {"error": "The user did not choose any of the options."}
    return {"result": choice}
