"""A running gateway re-reads its config: unaffected upstreams and downstream sessions stay, clients are told.

Upstreams are `hub_tagged_server.py` stdio children (their `whoami` says which process serves and which config
entry started it). The gateway runs in this process over real HTTP (reloads triggered by `ConfigReloader.reload`)
or as the real `adk-mcp-gateway serve` child over stdio (reloads triggered by `SIGHUP` and by `--watch`).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from hub_harness import (
    DEADLINE,
    HERE,
    Heard,
    connect,
    gateway_stdio,
    structured,
    text_of,
    tool_names,
    wait_for_file,
    write_config,
)
from mcp import Client, MCPError, types

from gateway.config import load_config
from gateway.errors import ConfigError
from gateway.hub.file_watch import FileWatcher
from gateway.hub.hub import Hub
from gateway.hub.reloader import ConfigReloader, Reload, reloading_gateway_server
from gateway.state import InMemoryStateStore
from tests.support.loopback import serving_tools
from tests.support.processes import descendants

pytestmark = pytest.mark.anyio

TAGGED = str(HERE / "hub_tagged_server.py")


def tagged(tag: str, **options: Any) -> dict[str, Any]:
    """A config entry starting `hub_tagged_server.py` with `TAG=tag`."""
    return {"command": sys.executable, "args": ["-I", "-S", TAGGED], "env": {"TAG": tag}, **options}


@asynccontextmanager
async def reloading_gateway(config: Path) -> AsyncGenerator[tuple[str, ConfigReloader]]:
    """The gateway for `config` served over HTTP in this process (no SIGHUP handler); its URL and reloader."""
    loaded = load_config(config)
    server = reloading_gateway_server(loaded, sighup=False, name=loaded.name, state_store=InMemoryStateStore())
    hub = cast("Hub", server.extension)
    assert hub.reloader is not None
    async with serving_tools(server) as base_url:
        yield base_url, cast("ConfigReloader", hub.reloader)


async def whoami(client: Client, tool: str) -> dict[str, Any]:
    return structured(await client.call_tool(tool, {}))


async def until_gone(pids: set[int]) -> None:
    """Wait until none of `pids` is a live descendant of this process."""
    with anyio.fail_after(DEADLINE):
        while pids & descendants():  # noqa: ASYNC110 - a process's end has no event to wait on here
            await anyio.sleep(0.05)


def is_list_changed(notification: types.ServerNotification) -> bool:
    return isinstance(notification, types.ToolListChangedNotification)


async def test_a_reload_keeps_unchanged_upstreams_replaces_changed_ones_and_closes_removed_ones(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"keep": tagged("k"), "change": tagged("c1"), "gone": tagged("g")})
    heard = Heard()
    with anyio.fail_after(DEADLINE * 3):
        async with (
            reloading_gateway(config) as (base_url, reloader),
            connect(base_url, "legacy", message_handler=heard) as client,
        ):
            assert sorted(await tool_names(client)) == sorted(
                f"{key}_{tool}" for key in ("keep", "change", "gone") for tool in ("hold", "whoami")
            )
            kept, changed, gone = [await whoami(client, f"{key}_whoami") for key in ("keep", "change", "gone")]
            assert {kept["pid"], changed["pid"], gone["pid"]} <= descendants()

            write_config(tmp_path, {"keep": tagged("k"), "change": tagged("c2"), "new": tagged("n")})
            outcome = await reloader.reload()
            assert outcome == Reload(added=("new",), changed=("change",), removed=("gone",))

            # The same downstream session (same Mcp-Session-Id) is told, and goes on working.
            await heard.wait_for(is_list_changed)
            assert sorted(await tool_names(client)) == sorted(
                f"{key}_{tool}" for key in ("keep", "change", "new") for tool in ("hold", "whoami")
            )
            assert await whoami(client, "keep_whoami") == kept  # the same process: not reconnected
            replaced = await whoami(client, "change_whoami")
            assert replaced["tag"] == "c2"
            assert replaced["pid"] != changed["pid"]
            added = await whoami(client, "new_whoami")
            assert added["tag"] == "n"
            await until_gone({changed["pid"], gone["pid"]})
            upstream_processes = {kept["pid"], replaced["pid"], added["pid"]}
            assert upstream_processes <= descendants()
            with pytest.raises(MCPError, match="Unknown tool 'gone_whoami'"):
                await client.call_tool("gone_whoami", {})
        # The gateway's end takes every upstream process with it.
        await until_gone(upstream_processes)


async def test_an_invalid_config_is_refused_and_the_old_one_keeps_serving(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"a": tagged("a")})
    with anyio.fail_after(DEADLINE * 2):
        async with reloading_gateway(config) as (base_url, reloader), connect(base_url, "legacy") as client:
            before = await whoami(client, "a_whoami")

            config.write_text('{"mcpServers": {"a": ', encoding="utf-8")
            with pytest.raises(ConfigError, match="not valid JSON"):
                await reloader.reload()
            write_config(tmp_path, {"a": tagged("a2", callTimeout="soon")})
            with pytest.raises(ConfigError, match=r"mcpServers\.a\.callTimeout"):
                await reloader.reload()
            write_config(tmp_path, {"a": tagged("a2")}, tools=["no_such_file.py"])
            with pytest.raises(ConfigError, match=r"no_such_file\.py"):
                await reloader.reload()

            assert await tool_names(client) == ["a_hold", "a_whoami"]
            assert await whoami(client, "a_whoami") == before  # the old upstream, untouched

            write_config(tmp_path, {"a": tagged("a2")})
            assert await reloader.reload() == Reload(changed=("a",))
            assert (await whoami(client, "a_whoami"))["tag"] == "a2"


async def test_a_call_in_flight_on_a_changed_upstream_finishes_before_its_process_ends(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"a": tagged("a1")})
    started, gate = tmp_path / "started", tmp_path / "gate"
    held: list[types.CallToolResult] = []
    heard = Heard()
    with anyio.fail_after(DEADLINE * 2):
        async with (
            reloading_gateway(config) as (base_url, reloader),
            connect(base_url, "legacy", message_handler=heard) as client,
        ):
            old = await whoami(client, "a_whoami")

            async def hold() -> None:
                held.append(await client.call_tool("a_hold", {"started": str(started), "gate": str(gate)}))

            async with anyio.create_task_group() as tg:
                tg.start_soon(hold)
                await wait_for_file(started)
                write_config(tmp_path, {"a": tagged("a2")})
                # The reload does not wait for the call; new calls go to the new upstream at once.
                assert await reloader.reload() == Reload(changed=("a",))
                await heard.wait_for(is_list_changed)
                new = await whoami(client, "a_whoami")
                assert new["tag"] == "a2"
                assert old["pid"] in descendants()  # still serving the held call
                gate.write_text("open")
            assert text_of(held[0]) == "released"
            assert not held[0].is_error
            await until_gone({old["pid"]})
            assert new["pid"] in descendants()


async def test_reloads_asked_for_in_quick_succession_end_in_the_last_config(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"a": tagged("a1")})
    with anyio.fail_after(DEADLINE * 2):
        async with reloading_gateway(config) as (base_url, reloader), connect(base_url, "legacy") as client:
            first = await whoami(client, "a_whoami")
            write_config(tmp_path, {"a": tagged("a2"), "b": tagged("b")})
            async with anyio.create_task_group() as tg:
                for _ in range(3):
                    tg.start_soon(reloader.reload)
            assert reloader.reloads == 1  # the first applied it; the others found nothing changed
            assert sorted(await tool_names(client)) == ["a_hold", "a_whoami", "b_hold", "b_whoami"]
            second = await whoami(client, "a_whoami")
            assert second["tag"] == "a2"
            await until_gone({first["pid"]})


async def test_a_reload_loads_changed_local_tool_files_again(tmp_path: Path) -> None:
    tools_file = tmp_path / "local_tools.py"
    tools_file.write_text('def hello() -> str:\n    """Greet."""\n    return "hello"\n', encoding="utf-8")
    config = write_config(tmp_path, {"a": tagged("a")}, tools=["local_tools.py"])
    with anyio.fail_after(DEADLINE * 2):
        async with reloading_gateway(config) as (base_url, reloader), connect(base_url, "legacy") as client:
            kept = await whoami(client, "a_whoami")
            assert await reloader.reload() == Reload()  # nothing changed: nothing reloaded
            tools_file.write_text('def goodbye() -> str:\n    """Part."""\n    return "bye"\n', encoding="utf-8")
            assert await reloader.reload() == Reload(local_tools=True)
            assert await tool_names(client) == ["a_hold", "a_whoami", "goodbye"]
            assert text_of(await client.call_tool("goodbye", {})) == "bye"
            assert await whoami(client, "a_whoami") == kept


def gateway_child(config: Path, state: Path, *extra: str) -> Any:
    """`adk-mcp-gateway serve CONFIG` over stdio, with extra flags."""
    params = gateway_stdio(config, state)
    return params.model_copy(update={"args": [*params.args, *extra]})


def the_gateway_process(before: set[int]) -> int:
    """The gateway child started since `before` was taken (a direct child of this process)."""
    children = {int(pid) for pid in Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read_text().split()}
    started = (children - before) & descendants()
    assert len(started) == 1, started
    return started.pop()


async def test_sighup_reloads_a_gateway_served_over_stdio(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"a": tagged("a"), "b": tagged("b")})
    heard = Heard()
    before = descendants()
    with anyio.fail_after(DEADLINE * 3):
        async with Client(gateway_child(config, tmp_path / "state.db"), mode="legacy", message_handler=heard) as client:
            gateway_pid = the_gateway_process(before)
            a, b = await whoami(client, "a_whoami"), await whoami(client, "b_whoami")
            assert {a["pid"], b["pid"]} <= descendants(gateway_pid)

            write_config(tmp_path, {"a": tagged("a"), "c": tagged("c")})
            os.kill(gateway_pid, signal.SIGHUP)
            os.kill(gateway_pid, signal.SIGHUP)  # a second one right after: merged, nothing breaks
            await heard.wait_for(is_list_changed)
            assert sorted(await tool_names(client)) == ["a_hold", "a_whoami", "c_hold", "c_whoami"]
            assert await whoami(client, "a_whoami") == a
            c = await whoami(client, "c_whoami")
            await until_gone({b["pid"]})
            assert descendants(gateway_pid) == {a["pid"], c["pid"]}

            config.write_text("{", encoding="utf-8")  # refused (logged); the gateway goes on serving
            os.kill(gateway_pid, signal.SIGHUP)
            write_config(tmp_path, {"c": tagged("c")})
            os.kill(gateway_pid, signal.SIGHUP)
            await heard.wait_for(lambda _: sum(map(is_list_changed, heard.notifications)) >= 2)
            assert sorted(await tool_names(client)) == ["c_hold", "c_whoami"]
            await until_gone({a["pid"]})


async def test_serve_watch_reloads_once_after_an_editor_saves_in_several_steps(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"a": tagged("a")})
    heard = Heard()
    with anyio.fail_after(DEADLINE * 3):
        params = gateway_child(config, tmp_path / "state.db", "--watch")
        async with Client(params, mode="legacy", message_handler=heard) as client:
            assert await tool_names(client) == ["a_hold", "a_whoami"]
            # An editor's save: truncate, write half, write the rest; then a backup file and a rename over it.
            text = json.dumps({"name": "test-gateway", "mcpServers": {"a": tagged("a"), "b": tagged("b")}})
            with config.open("w", encoding="utf-8") as handle:
                handle.write(text[: len(text) // 2])
                handle.flush()
                handle.write(text[len(text) // 2 :])
            staged = tmp_path / "gateway.json.tmp"
            staged.write_text(text, encoding="utf-8")
            staged.replace(config)
            await heard.wait_for(is_list_changed)
            assert sorted(await tool_names(client)) == ["a_hold", "a_whoami", "b_hold", "b_whoami"]


async def test_the_file_watcher_reports_a_multi_step_save_once(tmp_path: Path) -> None:
    watched = tmp_path / "gateway.json"
    watched.write_text("{}", encoding="utf-8")
    reports: list[str] = []
    reported = anyio.Event()

    async def on_change() -> None:
        nonlocal reported
        reports.append(watched.read_text(encoding="utf-8"))
        reported.set()
        reported = anyio.Event()

    watcher = FileWatcher(lambda: [watched], on_change, interval=0.02, settle=0.2)
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            await tg.start(watcher.run)
            waiting = reported
            watched.write_text("", encoding="utf-8")
            watched.unlink()
            watched.write_text('{"mcpServers"', encoding="utf-8")
            watched.write_text('{"mcpServers": {}}', encoding="utf-8")
            await waiting.wait()
            waiting = reported
            watched.write_text('{"mcpServers": {"x": {}}}', encoding="utf-8")
            await waiting.wait()
            tg.cancel_scope.cancel()
    assert reports == ['{"mcpServers": {}}', '{"mcpServers": {"x": {}}}']


async def test_a_modern_client_hears_of_a_reload_on_its_listen_stream(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"a": tagged("a")})
    with anyio.fail_after(DEADLINE * 2):
        async with reloading_gateway(config) as (base_url, reloader), connect(base_url, "auto") as client:
            assert client.protocol_version == "2026-07-28"
            async with client.listen(tools_list_changed=True) as subscription:
                write_config(tmp_path, {"a": tagged("a"), "b": tagged("b")})
                assert await reloader.reload() == Reload(added=("b",))
                event = await anext(aiter(subscription))
            assert type(event).__name__ == "ToolsListChanged"
            assert sorted(await tool_names(client)) == ["a_hold", "a_whoami", "b_hold", "b_whoami"]
