"""`confirm`: the gateway asks the downstream user before forwarding, and a refusal never reaches the upstream."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from hub_harness import DEADLINE, Mode, connect, gateway_http, text_of, upstream_http, write_config
from mcp import types

from tests.support.client_callbacks import ClientCallbacks

pytestmark = pytest.mark.anyio

REJECTED = "This tool call is rejected."


def policies(url: str) -> dict[str, dict[str, object]]:
    """One upstream per policy, all our HTTP upstream."""
    return {
        "always": {"url": url, "confirm": True},
        "listed": {"url": url, "confirm": ["record"]},
        "risky": {"url": url, "confirm": "destructive"},
        "never": {"url": url},
    }


def calls_recorded(marker: Path) -> int:
    """How many times the upstream's `record` ran with this marker."""
    return len(marker.read_text().splitlines()) if marker.exists() else 0


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_each_policy_asks_for_exactly_its_tools_and_an_accepted_call_runs(mode: Mode, tmp_path: Path) -> None:
    downstream = ClientCallbacks(confirm=True)
    marker = tmp_path / "calls.txt"
    results: dict[str, types.CallToolResult] = {}
    asked: dict[str, bool] = {}
    async with upstream_http() as url:
        config = write_config(tmp_path, policies(url))
        with anyio.fail_after(DEADLINE):
            async with gateway_http(config) as base_url, connect(base_url, mode, **downstream.callbacks()) as client:
                for name in (
                    "always_echo",
                    "listed_echo",
                    "listed_record",
                    "risky_peek",
                    "risky_record",
                    "never_record",
                ):
                    before = len(downstream.asked)
                    arguments = {"text": "hi"} if name.endswith("echo") else {"marker": str(marker)}
                    results[name] = await client.call_tool(name, arguments)
                    asked[name] = len(downstream.asked) > before

    assert asked == {
        "always_echo": True,
        "listed_echo": False,
        "listed_record": True,
        "risky_peek": False,  # readOnlyHint: true
        "risky_record": True,  # no annotations: destructive by MCP's defaults
        "never_record": False,
    }
    assert all(not result.is_error for result in results.values()), {n: text_of(r) for n, r in results.items()}
    assert text_of(results["always_echo"]) == "hi"
    assert calls_recorded(marker) == 3
    assert downstream.asked[0].startswith("Allow the tool call always_echo(")


@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.parametrize("tool", ["always_record", "listed_record", "risky_record"])
async def test_a_declined_call_is_rejected_and_never_reaches_the_upstream(
    tool: str, mode: Mode, tmp_path: Path
) -> None:
    downstream = ClientCallbacks(confirm=False)
    marker = tmp_path / "calls.txt"
    async with upstream_http() as url:
        config = write_config(tmp_path, policies(url))
        with anyio.fail_after(DEADLINE):
            async with gateway_http(config) as base_url, connect(base_url, mode, **downstream.callbacks()) as client:
                declined = await client.call_tool(tool, {"marker": str(marker)})
                unguarded = await client.call_tool("never_peek", {"marker": str(marker)})
    assert declined.is_error
    assert text_of(declined) == REJECTED
    assert len(downstream.asked) == 1
    assert not unguarded.is_error
    assert calls_recorded(marker) == 0


async def test_an_answer_sent_before_the_gateway_asked_never_forwards_the_call(tmp_path: Path) -> None:
    downstream = ClientCallbacks(confirm=False)
    marker = tmp_path / "calls.txt"
    unasked = types.ElicitResult(action="accept", content={"confirm": True})
    async with upstream_http() as url:
        config = write_config(tmp_path, policies(url))
        with anyio.fail_after(DEADLINE):
            async with gateway_http(config) as base_url, connect(base_url, "auto", **downstream.callbacks()) as client:
                assert client.protocol_version == "2026-07-28"
                result = await client.call_tool(
                    "always_record", {"marker": str(marker)}, input_responses={"elicit-0": unasked}
                )
    assert len(downstream.asked) == 1
    assert text_of(result) == REJECTED
    assert calls_recorded(marker) == 0
