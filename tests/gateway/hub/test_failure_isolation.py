"""One upstream's failure stays with it: a hang, a name that starts to collide, or being down harms no other tool.

A hung upstream is an HTTP listener that accepts connections and never says a word (the kernel accepts them).
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import anyio
import httpx2
import pytest
from hub_harness import DEADLINE, HERE, LOCAL_TOOLS, connect, gateway_http, text_of, tool_names
from hub_harness import write_config as write_gateway_config
from mcp import types

from tests.support.loopback import bound_socket

pytestmark = pytest.mark.anyio

CONNECT_TIMEOUT = 30.0
"""The hung upstream's connect timeout: what a call would wait if it had to connect first."""
LIST_TIMEOUT = 0.5
HUNG_CONNECT_TIMEOUT = 5.0
"""The connect timeout of the hung upstream whose tool is called: the call waits that long, no other does."""
NOTIFYING = [sys.executable, "-I", str(HERE / "hub_notifying_server.py")]


def hung_upstream(silent_port: int, **options: object) -> dict[str, object]:
    """A config entry for an HTTP upstream that never answers."""
    return {"url": f"http://127.0.0.1:{silent_port}/mcp", "connectTimeout": CONNECT_TIMEOUT, **options}


async def test_a_hung_upstream_does_not_delay_a_new_sessions_local_call(tmp_path: Path) -> None:
    with bound_socket() as silent:
        config = write_gateway_config(tmp_path, {"hung": hung_upstream(silent.getsockname()[1])}, tools=[LOCAL_TOOLS])
        async with gateway_http(config) as base_url, connect(base_url, "legacy") as client:
            # A fraction of the connect timeout: the call does not wait for the hung upstream at all. (Sent as a
            # bare request: `Client.call_tool` would list the tools afterwards to learn the output schema, and
            # that listing waits for the hung upstream up to its `listTimeout`.)
            request = types.CallToolRequest(params=types.CallToolRequestParams(name="shout", arguments={"text": "hi"}))
            with anyio.fail_after(CONNECT_TIMEOUT / 10):
                result = await client.session.send_request(request, types.CallToolResult)
    assert text_of(result) == "HI"


async def test_a_listing_leaves_out_an_upstream_that_does_not_answer_and_healthz_says_why(tmp_path: Path) -> None:
    with bound_socket() as silent:
        config = write_gateway_config(
            tmp_path,
            {
                "hung": hung_upstream(
                    silent.getsockname()[1], listTimeout=LIST_TIMEOUT, connectTimeout=HUNG_CONNECT_TIMEOUT
                ),
                "n": {"command": NOTIFYING[0], "args": NOTIFYING[1:]},
            },
            tools=[LOCAL_TOOLS],
        )
        async with (
            gateway_http(config) as base_url,
            connect(base_url, "legacy") as client,
            httpx2.AsyncClient(timeout=DEADLINE) as http,
        ):
            with anyio.fail_after(HUNG_CONNECT_TIMEOUT / 2):
                names = await tool_names(client)
                health = (await http.get(f"{base_url}/healthz")).json()
            with anyio.fail_after(DEADLINE):
                # A call of the hung upstream's own tool waits for it (up to its connect timeout, not its list
                # timeout: a slow start is not a hang), then is an error the model can read, naming the upstream.
                hung_call = await client.call_tool("hung_anything", {})
    assert "shout" in names
    assert "n_grow" in names
    assert not any(name.startswith("hung_") for name in names)
    assert health["upstreams"]["hung"]["state"] == "failing"
    assert f"did not answer the tool listing within {LIST_TIMEOUT:g} s" in health["upstreams"]["hung"]["error"]
    assert hung_call.is_error
    assert "'hung'" in text_of(hung_call)
    assert f"within {HUNG_CONNECT_TIMEOUT:g} s" in text_of(hung_call)


async def test_a_name_that_starts_to_collide_is_withheld_and_every_other_tool_keeps_working(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The upstream passes its names through; `grow` adds `extra_7`, which a local tool already publishes.
    local = tmp_path / "local_extra.py"
    local.write_text('def extra_7() -> str:\n    """The local extra."""\n    return "local"\n', encoding="utf-8")
    config = write_gateway_config(
        tmp_path,
        {"n": {"command": NOTIFYING[0], "args": NOTIFYING[1:], "prefix": "", "sessionPolicy": "shared"}},
        tools=[str(local), LOCAL_TOOLS],
    )
    async with (
        gateway_http(config) as base_url,
        connect(base_url, "legacy") as client,
        httpx2.AsyncClient(timeout=DEADLINE) as http,
    ):
        with anyio.fail_after(DEADLINE):
            before = await tool_names(client)
            assert "extra_7" in before
            assert text_of(await client.call_tool("grow", {})) == "8 tools"
            with caplog.at_level(logging.WARNING):
                after = await tool_names(client)
            local_call = await client.call_tool("extra_7", {})
            other_call = await client.call_tool("shout", {"text": "still here"})
            upstream_call = await client.call_tool("roots_changes", {})
            health = (await http.get(f"{base_url}/healthz")).json()
    assert sorted(after) == sorted(before)
    assert text_of(local_call) == "local"
    assert text_of(other_call) == "STILL HERE"
    assert not upstream_call.is_error
    warnings = [record.getMessage() for record in caplog.records if "extra_7" in record.getMessage()]
    assert warnings
    assert "upstream 'n'" in warnings[0]
    assert "local" in warnings[0]
    assert health["upstreams"]["n"]["withheld"] == [{"tool": "extra_7", "kept": "local"}]


async def test_a_tool_of_a_down_upstream_answers_with_an_error_naming_the_upstream_and_why(tmp_path: Path) -> None:
    config = write_gateway_config(
        tmp_path, {"broken": {"command": str(tmp_path / "no-such-server"), "connectTimeout": 5}}, tools=[LOCAL_TOOLS]
    )
    async with gateway_http(config) as base_url, connect(base_url, "legacy") as client:
        with anyio.fail_after(DEADLINE):
            result = await client.call_tool("broken_anything", {})
    assert result.is_error
    assert "'broken'" in text_of(result)
    assert "no-such-server" in text_of(result)


async def test_an_upstream_left_out_while_it_starts_is_announced_once_its_tools_arrive(tmp_path: Path) -> None:
    tiny = f"{sys.executable} -I -S {HERE / 'hub_tiny_server.py'}"
    slow = {"command": "sh", "args": ["-c", f"sleep {LIST_TIMEOUT * 4}; exec {tiny}"], "listTimeout": LIST_TIMEOUT}
    config = write_gateway_config(tmp_path, {"slow": slow}, tools=[LOCAL_TOOLS])
    changed = anyio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with gateway_http(config) as base_url, connect(base_url, "legacy", message_handler=on_message) as client:
        with anyio.fail_after(DEADLINE):
            first = await tool_names(client)
            await changed.wait()
            second = await tool_names(client)
    assert first == ["shout"]
    assert second == ["slow_pong", "shout"]
