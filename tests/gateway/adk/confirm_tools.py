"""Our own server-mode tools for the to_adk tests: one needs a confirmation."""

from __future__ import annotations

from pathlib import Path

from gateway import FunctionTool


def remove_item(item: str, marker: str) -> dict[str, str]:
    """Remove an item (writes `marker` to prove it ran)."""
    Path(marker).write_text(item)
    return {"removed": item}


remove_tool = FunctionTool(remove_item, require_confirmation=True)
