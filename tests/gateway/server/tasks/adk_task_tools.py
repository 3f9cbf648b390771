"""A real google-adk `LongRunningFunctionTool` for the served-task tests, gated by an event the test opens."""

from __future__ import annotations

from collections.abc import AsyncGenerator

import anyio
from google.adk.tools import LongRunningFunctionTool

released = anyio.Event()


async def watch_backup(name: str) -> AsyncGenerator[dict[str, str]]:
    """Watch a backup until it is done."""
    yield {"status": "queued", "job": name}
    yield {"status": "running", "job": name}
    await released.wait()
    yield {"status": "done", "job": name}


backup_tool = LongRunningFunctionTool(watch_backup)
