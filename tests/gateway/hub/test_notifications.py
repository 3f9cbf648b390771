"""What an upstream says outside its replies crosses the gateway: list changes, resource updates, roots.

The upstream is `hub_notifying_server.py` over stdio; the gateway is served over HTTP in this process and over
stdio as the real CLI child; the downstream client speaks the handshake era (a modern-era client has no channel
for messages outside its own requests).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Literal

import anyio
import pytest
from hub_harness import DEADLINE, HERE, ROOT, Heard, connect, gateway, text_of, tool_names, write_config
from mcp import Client, types
from mcp.client.context import ClientRequestContext

# Subscriptions and roots are deprecated from 2026-07-28 on; these clients speak the handshake era, where they are not.
pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")]

NOTIFYING = [sys.executable, "-I", str(HERE / "hub_notifying_server.py")]
NOTE = "n+note://a"


def config(tmp_path: Path, **options: Any) -> Path:
    return write_config(tmp_path, {"n": {"command": NOTIFYING[0], "args": NOTIFYING[1:], **options}})


@pytest.mark.parametrize("served_over", ["http", "stdio"])
async def test_an_upstream_tool_list_change_reaches_the_client_and_the_new_tool_is_listed(
    served_over: Literal["http", "stdio"], tmp_path: Path
) -> None:
    heard = Heard()
    with anyio.fail_after(DEADLINE * 2):
        async with (
            gateway(served_over, config(tmp_path), tmp_path / "state.db") as target,
            connect(target, "legacy", message_handler=heard) as client,
        ):
            before = await tool_names(client)
            grown = f"n_extra_{len(before)}"  # `grow` names the tool it adds after the count of tools
            assert grown not in before
            await client.call_tool("n_grow", {})
            await heard.wait_for(lambda n: isinstance(n, types.ToolListChangedNotification))
            after = await tool_names(client)
    assert sorted(after) == sorted([*before, grown])


async def test_a_resource_update_reaches_the_subscribed_client_only(tmp_path: Path) -> None:
    subscriber, bystander = Heard(), Heard()
    with anyio.fail_after(DEADLINE * 2):
        async with (
            gateway("http", config(tmp_path, session_policy="shared"), tmp_path / "state.db") as target,
            connect(target, "legacy", message_handler=subscriber) as watching,
            connect(target, "legacy", message_handler=bystander) as other,
        ):
            assert [str(resource.uri) for resource in (await watching.list_resources()).resources] == [NOTE]
            await other.list_resources()
            await watching.subscribe_resource(NOTE)
            await other.call_tool("n_touch", {})
            updated = await subscriber.wait_for(lambda n: isinstance(n, types.ResourceUpdatedNotification))
            # Both listed resources, so both hear that the list changed; only one subscribed to the update.
            await bystander.wait_for(lambda n: isinstance(n, types.ResourceListChangedNotification))
    assert isinstance(updated, types.ResourceUpdatedNotification)
    assert str(updated.params.uri) == NOTE
    assert "notifications/resources/updated" not in bystander.methods()


async def test_an_isolated_upstream_session_notifies_only_its_own_client(tmp_path: Path) -> None:
    caller, other_heard = Heard(), Heard()
    with anyio.fail_after(DEADLINE * 2):
        async with (
            gateway("http", config(tmp_path), tmp_path / "state.db") as target,
            connect(target, "legacy", message_handler=caller) as client,
            connect(target, "legacy", message_handler=other_heard) as other,
        ):
            others_before = await tool_names(other)
            await client.call_tool("n_grow", {})
            await caller.wait_for(lambda n: isinstance(n, types.ToolListChangedNotification))
            assert len(await tool_names(client)) == len(others_before) + 1
            # The other client has its own upstream session, whose tool list did not change.
            assert await tool_names(other) == others_before
    assert "notifications/tools/list_changed" not in other_heard.methods()


async def test_an_upstream_asks_the_client_for_its_roots_mid_call(tmp_path: Path) -> None:
    async def roots(context: ClientRequestContext) -> types.ListRootsResult:
        del context
        return types.ListRootsResult(roots=[types.Root(uri="file:///srv/project", name="project")])

    with anyio.fail_after(DEADLINE * 2):
        async with gateway("http", config(tmp_path), tmp_path / "state.db") as target:
            async with connect(target, "legacy", list_roots_callback=roots) as client:
                offered = await client.call_tool("n_roots", {})
            async with connect(target, "legacy") as rootless:
                refused = await rootless.call_tool("n_roots", {})
    assert text_of(offered) == "file:///srv/project"
    assert text_of(refused) == "error: The gateway's client does not offer roots."


async def test_a_client_roots_change_reaches_its_upstream_session(tmp_path: Path) -> None:
    async def roots(context: ClientRequestContext) -> types.ListRootsResult:
        del context
        return types.ListRootsResult(roots=[])

    with anyio.fail_after(DEADLINE * 2):
        async with (
            gateway("http", config(tmp_path), tmp_path / "state.db") as target,
            connect(target, "legacy", list_roots_callback=roots) as client,
        ):
            assert text_of(await client.call_tool("n_roots_changes", {})) == "0"
            await _send_roots_changed(client)
            counted = "0"
            while counted == "0":  # a notification has no reply to wait for: poll the upstream's count
                await anyio.sleep(0.02)
                counted = text_of(await client.call_tool("n_roots_changes", {}))
    assert counted == "1"


async def _send_roots_changed(client: Client) -> None:
    await client.send_roots_list_changed()  # pyright: ignore[reportDeprecated]


@pytest.mark.parametrize("served_over", ["http", "stdio"])
async def test_a_modern_client_hears_an_upstream_list_change_on_its_listen_stream(
    served_over: Literal["http", "stdio"], tmp_path: Path
) -> None:
    with anyio.fail_after(DEADLINE * 2):
        async with (
            gateway(served_over, config(tmp_path, session_policy="shared"), tmp_path / "state.db") as target,
            connect(target, "auto") as client,
        ):
            assert client.protocol_version == "2026-07-28"
            async with client.listen(tools_list_changed=True, prompts_list_changed=True) as subscription:
                assert subscription.honored.tools_list_changed is True
                await client.call_tool("n_grow", {})
                event = await anext(aiter(subscription))
    assert type(event).__name__ == "ToolsListChanged"


async def test_a_listen_stream_gets_only_the_changes_it_asked_for(tmp_path: Path) -> None:
    with anyio.fail_after(DEADLINE * 2):
        async with (
            gateway("http", config(tmp_path, session_policy="shared"), tmp_path / "state.db") as target,
            connect(target, "auto") as client,
            client.listen(resources_list_changed=True) as resources,
        ):
            await client.call_tool("n_grow", {})  # a tool-list change first: the stream did not ask for it
            await client.call_tool("n_touch", {})  # then a resource-list change
            event = await anext(aiter(resources))
    assert type(event).__name__ == "ResourcesListChanged"


async def test_a_pinned_modern_upstream_announces_its_list_changes_to_listening_clients(tmp_path: Path) -> None:
    """An upstream pinned to 2026-07-28 is still asked what it offers, so its list-change stream is followed."""
    fixture = ROOT / "tests/conformance/fixture_upstream.py"
    upstream = {
        "command": sys.executable,
        "args": ["-I", str(fixture), "stdio"],
        "prefix": "",
        "protocolVersion": "2026-07-28",
        "sessionPolicy": "shared",
        "listTimeout": DEADLINE,
    }
    with anyio.fail_after(DEADLINE * 2):
        async with (
            gateway("http", write_config(tmp_path, {"fx": upstream}), tmp_path / "state.db") as target,
            connect(target, "auto") as client,
            client.listen(prompts_list_changed=True) as subscription,
        ):
            await client.call_tool("test_trigger_prompt_change", {})
            event = await anext(aiter(subscription))
    assert type(event).__name__ == "PromptsListChanged"
