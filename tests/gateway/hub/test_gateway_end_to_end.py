"""One gateway in front of two real upstreams and a local tool, served over stdio and HTTP, to clients of both eras."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import anyio
import pytest
from hub_harness import (
    DEADLINE,
    LOCAL_TOOLS,
    Mode,
    connect,
    gateway,
    structured,
    time_server,
    tool_names,
    upstream_http,
    write_config,
)

pytestmark = pytest.mark.anyio

UPSTREAM_TOOL_NAMES = [
    "ask_name",
    "count_up",
    "crash",
    "echo",
    "peek",
    "process_id",
    "quiet_progress",
    "record",
    "summarize",
    "tally",
    "wait_forever",
]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.parametrize("served_over", ["stdio", "http"])
async def test_a_client_sees_one_prefixed_catalog_and_reaches_every_source(
    served_over: Literal["stdio", "http"], mode: Mode, tmp_path: Path
) -> None:
    async with upstream_http() as notes_url:
        config = write_config(tmp_path, {"time": time_server(), "notes": {"url": notes_url}}, tools=[LOCAL_TOOLS])
        with anyio.fail_after(DEADLINE * 2):
            async with (
                gateway(served_over, config, tmp_path / "state.db") as target,
                connect(target, mode) as client,
            ):
                names = await tool_names(client)
                now = await client.call_tool("time_get_current_time", {"timezone": "UTC"})
                echoed = await client.call_tool("notes_echo", {"text": "hello"})
                shouted = await client.call_tool("shout", {"text": "hello"})

    assert names == [
        "time_convert_time",
        "time_get_current_time",
        *(f"notes_{name}" for name in UPSTREAM_TOOL_NAMES),
        "shout",
    ]
    assert structured(now)["timezone"] == "UTC"
    assert (echoed.is_error, echoed.structured_content) == (False, {"result": "hello"})
    assert (shouted.is_error, shouted.structured_content) == (False, {"result": "HELLO"})
