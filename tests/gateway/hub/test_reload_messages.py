"""What a reload logs: why an upstream is closed, and which file's change started it."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from hub_harness import DEADLINE, HERE, connect, tool_names, write_config

from gateway.config import load_config
from gateway.hub.hub import Hub
from gateway.hub.reloader import ConfigReloader, reloading_gateway_server
from gateway.state import InMemoryStateStore
from tests.support.loopback import serving_tools

pytestmark = pytest.mark.anyio

TAGGED = str(HERE / "hub_tagged_server.py")


def tagged(tag: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-I", "-S", TAGGED], "env": {"TAG": tag}}


def reloader_of(config: Path, **options: Any) -> tuple[Any, ConfigReloader]:
    loaded = load_config(config)
    server = reloading_gateway_server(loaded, sighup=False, state_store=InMemoryStateStore(), **options)
    return server, cast("ConfigReloader", cast("Hub", server.extension).reloader)


async def test_a_changed_upstream_is_closed_because_it_changed_and_a_removed_one_because_it_left(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="gateway.hub.reloader")
    config = write_config(tmp_path, {"change": tagged("c1"), "gone": tagged("g")})
    server, reloader = reloader_of(config)
    with anyio.fail_after(DEADLINE * 2):
        async with serving_tools(server) as base_url, connect(base_url, "legacy") as client:
            assert "change_whoami" in await tool_names(client)
            write_config(tmp_path, {"change": tagged("c2")})
            await reloader.reload()
    closing = [record.getMessage() for record in caplog.records if record.getMessage().startswith("Closing")]
    assert any("change" in line and line.endswith(": its config entry changed.") for line in closing), closing
    assert any("gone" in line and line.endswith(": it left the config.") for line in closing), closing
    assert len(closing) == 2, closing


async def test_watch_names_the_tool_file_that_changed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="gateway.hub.reloader")
    tools_file = tmp_path / "local_tools.py"
    tools_file.write_text('def hello() -> str:\n    """Greet."""\n    return "hello"\n', encoding="utf-8")
    config = write_config(tmp_path, {}, tools=["local_tools.py"])
    server, reloader = reloader_of(config, watch=True, settle=0.2)
    with anyio.fail_after(DEADLINE * 2):
        async with serving_tools(server):
            await anyio.sleep(0.5)
            tools_file.write_text('def bye() -> str:\n    """Part."""\n    return "bye"\n', encoding="utf-8")
            while reloader.reloads == 0:  # noqa: ASYNC110 - the watcher polls; its reload has no event to wait on
                await anyio.sleep(0.05)
    said = [record.getMessage() for record in caplog.records if "changed: reloading" in record.getMessage()]
    assert said == [f"{tools_file} changed: reloading {config}"], said
