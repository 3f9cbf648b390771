"""google-adk agents with scripted models, to be served with `serve --agent`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.tools import FunctionTool, ToolContext, exit_loop
from pydantic import BaseModel
from scripted_model import ScriptedModel, call, say


def remember(fact: str, tool_context: ToolContext) -> dict[str, Any]:
    """Remember a fact in this session; count the user's facts across sessions."""
    facts = [*tool_context.state.get("facts", []), fact]
    tool_context.state["facts"] = facts
    total = tool_context.state["user:facts_total"] = tool_context.state.get("user:facts_total", 0) + 1
    return {"facts": facts, "total": total}


def note_script(fact: str) -> list[Any]:
    """What the note taker's model does for one request: remember the fact, then confirm it."""
    return [call("remember", {"fact": fact}), say(f"Noted: {fact}.")]


notes_model = ScriptedModel(script=note_script("the sky is blue"))
root_agent = LlmAgent(name="notetaker", model=notes_model, tools=[remember], description="Takes notes.")


class Sum(BaseModel):
    total: int
    explanation: str


sum_model = ScriptedModel(script=[say('```json\n{"total": 5, "explanation": "2 + 3"}\n```')])
sum_agent = LlmAgent(name="adder", model=sum_model, output_schema=Sum, description="Adds numbers.")


def shred(document: str, marker: str) -> dict[str, str]:
    """Shred a document (writes `marker` to prove it ran)."""
    Path(marker).write_text(document)
    return {"shredded": document}


shred_model = ScriptedModel()
shredder = LlmAgent(
    name="shredder",
    model=shred_model,
    tools=[FunctionTool(shred, require_confirmation=True)],
    description="Shreds documents.",
)


quit_model = ScriptedModel()
quitter = LlmAgent(name="quitter", model=quit_model, tools=[exit_loop], description="Stops when told to.")
