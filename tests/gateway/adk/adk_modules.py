"""Tool modules written the way an ADK user writes them, with google-adk's own classes."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator
from pathlib import Path
from typing import Any

from google.adk.tools import FunctionTool, LongRunningFunctionTool, ToolContext


def get_weather(city: str) -> dict[str, Any]:
    """Weather for a city."""
    return {"city": city, "celsius": 21}


weather_tool = FunctionTool(get_weather)


def delete_bucket(bucket: str, marker: str) -> dict[str, str]:
    """Delete a bucket (writes `marker` to prove it ran)."""
    Path(marker).write_text(bucket)
    return {"deleted": bucket}


delete_tool = FunctionTool(delete_bucket, require_confirmation=True)


def count(tool_context: ToolContext) -> dict[str, Any]:
    """Count calls in every state scope."""
    state = tool_context.state
    for key in ("calls", "user:calls", "app:calls"):
        state[key] = state.get(key, 0) + 1
    state["temp:seen"] = state.get("temp:seen", 0) + 1
    return {key: state[key] for key in ("calls", "user:calls", "app:calls", "temp:seen")}


counter_tool = FunctionTool(count)


def transfer(amount: int, tool_context: ToolContext) -> dict[str, Any]:
    """Transfer money, asking for a confirmation above 100."""
    confirmation = tool_context.tool_confirmation
    if amount > 100 and confirmation is None:
        tool_context.request_confirmation(hint=f"Transfer {amount} EUR?", payload={"amount": amount})
        return {"status": "waiting for approval"}
    if confirmation is not None and not confirmation.confirmed:
        return {"error": "The transfer was refused."}
    return {"transferred": amount, "confirmed": confirmation is not None and confirmation.confirmed}


transfer_tool = FunctionTool(transfer)


def _needs_approval(amount: int) -> bool:
    return amount > 100


def pay(amount: int) -> dict[str, int]:
    """Pay an amount."""
    return {"paid": amount}


pay_tool = FunctionTool(pay, require_confirmation=_needs_approval)


def start_job(name: str) -> dict[str, str]:
    """Start a long job."""
    return {"status": "pending", "job": name}


job_tool = LongRunningFunctionTool(start_job)


async def watch_job(name: str) -> AsyncGenerator[dict[str, str]]:
    """Watch a job until it is done."""
    for status in ("queued", "running", "done"):
        yield {"status": status, "job": name}


watch_tool = LongRunningFunctionTool(watch_job)


def count_steps(steps: int) -> Generator[str, None, dict[str, int]]:
    """Count steps, then say how many."""
    for step in range(1, steps + 1):
        yield f"step {step} of {steps}"
    return {"counted": steps}


steps_tool = FunctionTool(count_steps)
