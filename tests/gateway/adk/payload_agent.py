"""An agent whose tool asks for a confirmation with a payload, served by a `serve --agent` child in the tests.

The tool writes the payload it was confirmed with to the file named by `PAY_MARKER`, for the test to read.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.tools.tool_context import ToolContext
from scripted_model import ScriptedModel, call, say


def pay(amount: int, tool_context: ToolContext) -> dict[str, Any]:
    """Pay bob, once the user confirmed (and perhaps edited) the payment."""
    confirmation = tool_context.tool_confirmation
    if confirmation is None:
        tool_context.request_confirmation(hint="Check the payment.", payload={"amount": amount, "to": "bob"})
        tool_context.actions.skip_summarization = True  # the run pauses for the answer, without a model turn
        return {"status": "awaiting confirmation"}
    if not confirmation.confirmed:
        return {"error": "The payment was rejected."}
    Path(os.environ["PAY_MARKER"]).write_text(json.dumps(confirmation.payload))
    return {"paid": confirmation.payload}


payer = LlmAgent(
    name="payer",
    model=ScriptedModel(script=[call("pay", {"amount": 30}), say("Paid.")]),
    tools=[pay],
    description="Pays people.",
)
