"""One info-level log line per tool call: method, tool, upstream, duration and outcome."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from hub_harness import DEADLINE, LOCAL_TOOLS, connect, gateway_http, gateway_server, upstream_http, write_config
from mcp import Client, MCPError

pytestmark = pytest.mark.anyio

LOGGER = "gateway.server.observe.request_log"


def request_lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, object]]:
    """The request log records, as their structured fields."""
    fields = ("method", "tool", "upstream", "duration_ms", "outcome")
    return [
        {name: getattr(record, name) for name in fields}
        for record in caplog.records
        if record.name == LOGGER and record.levelname == "INFO"
    ]


async def test_each_call_logs_one_line_with_its_tool_upstream_duration_and_outcome(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger=LOGGER)
    async with upstream_http() as url:
        config = write_config(tmp_path, {"notes": {"url": url}}, tools=[LOCAL_TOOLS])
        with anyio.fail_after(DEADLINE):
            async with gateway_server(config) as server, Client(server.server, mode="legacy") as client:
                await client.call_tool("notes_echo", {"text": "hi"})
                await client.call_tool("notes_echo", {"text": 5})
                await client.call_tool("shout", {"text": "hi"})
                with pytest.raises(MCPError):
                    await client.call_tool("nope", {})
    # The upstream is our server mode in this process: its own lines (tool `echo`) are not the gateway's.
    lines = [line for line in request_lines(caplog) if line["tool"] != "echo"]
    assert [(line["tool"], line["upstream"], line["outcome"]) for line in lines] == [
        ("notes_echo", "notes", "ok"),
        ("notes_echo", "notes", "tool_error"),
        ("shout", None, "ok"),
        ("nope", None, "unknown_tool"),
    ]
    assert all(line["method"] == "tools/call" for line in lines)
    assert all(isinstance(line["duration_ms"], float) and line["duration_ms"] >= 0 for line in lines)
    message = next(r.getMessage() for r in caplog.records if r.name == LOGGER and "notes_echo" in r.getMessage())
    assert message.startswith("tools/call notes_echo upstream=notes ")
    assert message.endswith(" ok")


async def test_every_call_of_a_served_gateway_logs_its_line_even_when_the_calls_are_identical(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Served over HTTP as `serve` runs it: the repeat filter that collapses floods is on the log handlers then.
    caplog.set_level("INFO", logger=LOGGER)
    config = write_config(tmp_path, {}, tools=[LOCAL_TOOLS])
    with anyio.fail_after(DEADLINE):
        async with gateway_http(config) as base_url, connect(base_url, "legacy") as client:
            for _ in range(3):
                await client.call_tool("shout", {"text": "hi"})
    lines = [line for line in request_lines(caplog) if line["tool"] == "shout"]
    assert [line["outcome"] for line in lines] == ["ok", "ok", "ok"]
