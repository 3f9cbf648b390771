"""Tools for the `serve --workers` tests: which process served a call, and a shared counter."""

from __future__ import annotations

import os

from gateway.tools import ToolContext


def whoami() -> int:
    """The process id of the worker that ran this call."""
    return os.getpid()


def bump(tool_context: ToolContext) -> dict[str, int]:
    """Increment a session and an `app:` counter; returns both, and the worker's process id."""
    state = tool_context.state
    for key in ("count", "app:count"):
        state[key] = int(state.get(key, 0)) + 1
    return {"session": state["count"], "app": state["app:count"], "pid": os.getpid()}


__all__ = ["bump", "whoami"]
