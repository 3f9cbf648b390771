"""What crosses the hop: progress, elicitation, sampling and cancellation between the client and an upstream."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from hub_harness import (
    DEADLINE,
    Mode,
    connect,
    gateway_http,
    text_of,
    upstream_http,
    upstream_stdio,
    wait_for_file,
    write_config,
)
from mcp import types

from tests.support.client_callbacks import ClientCallbacks

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_upstream_progress_reaches_the_client_monotonic_and_with_its_messages(mode: Mode, tmp_path: Path) -> None:
    downstream = ClientCallbacks()
    async with upstream_http() as url:
        config = write_config(tmp_path, {"up": {"url": url}})
        with anyio.fail_after(DEADLINE):
            async with gateway_http(config) as base_url, connect(base_url, mode) as client:
                result = await client.call_tool("up_count_up", {"steps": 3}, progress_callback=downstream.on_progress)
    assert result.structured_content == {"counted": 3}
    assert [message for _, _, message in downstream.progress] == ["step 1 of 3", "step 2 of 3", "step 3 of 3"]
    values = [progress for progress, _, _ in downstream.progress]
    assert values == sorted(values)
    assert len(set(values)) == len(values)


async def test_upstream_progress_without_a_message_arrives_without_one(tmp_path: Path) -> None:
    downstream = ClientCallbacks()
    async with upstream_http() as url:
        config = write_config(tmp_path, {"up": {"url": url}})
        with anyio.fail_after(DEADLINE):
            async with gateway_http(config) as base_url, connect(base_url, "legacy") as client:
                await client.call_tool("up_quiet_progress", {}, progress_callback=downstream.on_progress)
    assert downstream.progress == [(1.0, 2.0, None), (2.0, 2.0, None)]


@pytest.mark.parametrize("upstream_transport", ["http", "stdio"])
async def test_an_upstream_elicitation_and_sampling_reach_the_client_and_the_answers_go_back(
    upstream_transport: str, tmp_path: Path
) -> None:
    downstream = ClientCallbacks(name="Grace", summary="short")
    async with upstream_http() as url:
        entry: dict[str, Any] = {"url": url} if upstream_transport == "http" else upstream_stdio(tmp_path / "up.db")
        config = write_config(tmp_path, {"up": entry})
        with anyio.fail_after(DEADLINE):
            async with (
                gateway_http(config) as base_url,
                connect(base_url, "legacy", **downstream.callbacks()) as client,
            ):
                named = await client.call_tool("up_ask_name", {})
                summarized = await client.call_tool("up_summarize", {"text": "a long story"})
    assert named.structured_content == {"action": "accept", "name": "Grace"}
    assert downstream.asked == ["What is your name?"]
    assert (summarized.is_error, text_of(summarized)) == (False, "short")
    [sampling] = downstream.samplings
    [message] = sampling.messages
    assert isinstance(message.content, types.TextContent)
    assert message.content.text == "Summarise: a long story"


@pytest.mark.parametrize("upstream_transport", ["http", "stdio"])
async def test_cancelling_a_call_cancels_the_upstream_tool(upstream_transport: str, tmp_path: Path) -> None:
    downstream = ClientCallbacks()
    marker = tmp_path / "cancelled.txt"
    async with upstream_http() as url:
        entry: dict[str, Any] = {"url": url} if upstream_transport == "http" else upstream_stdio(tmp_path / "up.db")
        config = write_config(tmp_path, {"up": entry})
        with anyio.fail_after(DEADLINE):
            async with gateway_http(config) as base_url, connect(base_url, "legacy") as client:
                async with anyio.create_task_group() as tg:

                    async def call() -> None:
                        arguments = {"marker": str(marker)}
                        await client.call_tool("up_wait_forever", arguments, progress_callback=downstream.on_progress)

                    tg.start_soon(call)
                    await downstream.started.wait()
                    tg.cancel_scope.cancel()
                assert await wait_for_file(marker) == "cancelled"
                # The session that carried the cancelled call still works.
                after = await client.call_tool("up_echo", {"text": "still here"})
    assert text_of(after) == "still here"
