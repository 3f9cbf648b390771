"""google-adk's own tools served over MCP: declarations, calls, confirmations and state, with google-adk itself."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
import pytest
from mcp import Client, types
from mcp.client.context import ClientRequestContext

from gateway.references import load_tools
from gateway.server import ToolServer

pytestmark = pytest.mark.anyio

HERE = Path(__file__).resolve().parent
MODULE = str(HERE / "adk_modules.py")
DEADLINE = 20.0
Mode = Literal["legacy", "auto"]
MODES: tuple[Mode, ...] = ("legacy", "auto")
Action = Literal["accept", "decline", "cancel"]


class Human:
    """An elicitation callback answering with the given actions in turn; keeps what it was asked."""

    def __init__(self, actions: Iterable[Action] = ()) -> None:
        self._actions = iter(actions)
        self.asked: list[str] = []

    async def __call__(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        del context
        self.asked.append(params.message)
        action = next(self._actions)
        return types.ElicitResult(action=action, content={"confirm": True} if action == "accept" else None)


@asynccontextmanager
async def serving(
    reference: str, mode: Mode = "legacy", human: Human | None = None, **options: Any
) -> AsyncGenerator[Client]:
    """A `ToolServer` of `reference`'s tools and an in-process client."""
    async with (
        ToolServer(load_tools(reference), **options) as server,
        Client(server.server, mode=mode, elicitation_callback=human or Human()) as client,
    ):
        yield client


async def _call(client: Client, name: str, args: dict[str, Any]) -> types.CallToolResult:
    with anyio.fail_after(DEADLINE):
        return await client.call_tool(name, args)


async def test_a_google_adk_function_tool_named_by_reference_is_served() -> None:
    async with serving(f"{MODULE}:weather_tool") as client:
        result = await _call(client, "get_weather", {"city": "Paris"})
    assert not result.is_error, result.content
    assert result.structured_content == {"city": "Paris", "celsius": 21}


@pytest.mark.parametrize("mode", MODES)
async def test_a_declined_google_adk_tool_that_requires_confirmation_does_not_run(mode: Mode, tmp_path: Path) -> None:
    marker = tmp_path / "deleted.txt"
    human = Human(["decline"])
    async with serving(f"{MODULE}:delete_tool", mode, human) as client:
        result = await _call(client, "delete_bucket", {"bucket": "photos", "marker": str(marker)})
    assert result.is_error
    assert result.content[0].text == "This tool call is rejected."  # pyright: ignore[reportAttributeAccessIssue]
    assert not marker.exists()
    assert human.asked == [f"Allow the tool call delete_bucket(bucket='photos', marker={str(marker)!r})?"]


@pytest.mark.parametrize("mode", MODES)
async def test_an_accepted_google_adk_tool_that_requires_confirmation_runs_once(mode: Mode, tmp_path: Path) -> None:
    marker = tmp_path / "deleted.txt"
    async with serving(f"{MODULE}:delete_tool", mode, Human(["accept"])) as client:
        result = await _call(client, "delete_bucket", {"bucket": "photos", "marker": str(marker)})
    assert not result.is_error, result.content
    assert result.structured_content == {"deleted": "photos"}
    assert marker.read_text() == "photos"
