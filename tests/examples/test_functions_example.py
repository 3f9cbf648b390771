"""examples/functions.py runs as documented."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway import FunctionTool, ToolContext
from gateway.config.references import load_tools

pytestmark = pytest.mark.anyio
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "functions.py"


async def test_every_example_tool_runs() -> None:
    tools = {tool.name: tool for tool in load_tools(str(EXAMPLE)) if isinstance(tool, FunctionTool)}
    context = ToolContext()
    reading = await tools["convert_temperature"].run_async(args={"value": 212, "to": "celsius"}, tool_context=context)
    assert reading == {"value": 100.0, "unit": "celsius"}
    days = await tools["days_between"].run_async(
        args={"start": "2026-11-02", "end": "2026-11-09", "count": "weekdays"}, tool_context=context
    )
    assert days == {"result": 5}
    await tools["remember"].run_async(args={"note": "a"}, tool_context=context)
    assert await tools["remember"].run_async(args={"note": "b"}, tool_context=context) == {"notes": ["a", "b"]}
    assert context.actions.state_delta == {"notes": ["a", "b"]}
    counted = await tools["count_words"].run_async(args={"text": "word " * 2500}, tool_context=context)
    assert counted == {"words": 2500}
    assert context.progress_sink.updates == ["0 of 2500 words", "1000 of 2500 words", "2000 of 2500 words"]  # type: ignore[attr-defined]
