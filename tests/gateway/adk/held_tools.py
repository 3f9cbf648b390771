"""A module whose confirmed tools are held by an agent and a list, not by module-level names of their own."""

from __future__ import annotations

from pathlib import Path

from google.adk.agents import LlmAgent
from google.adk.tools import FunctionTool


def shred(document: str, marker: str) -> dict[str, str]:
    """Shred a document (writes `marker` to prove it ran)."""
    Path(marker).write_text(document)
    return {"shredded": document}


def wipe(disk: str, marker: str) -> dict[str, str]:
    """Wipe a disk (writes `marker` to prove it ran)."""
    Path(marker).write_text(disk)
    return {"wiped": disk}


shredder = LlmAgent(name="shredder", model="gemini-2.5-flash", tools=[FunctionTool(shred, require_confirmation=True)])
DANGEROUS_TOOLS = [FunctionTool(wipe, require_confirmation=True)]
