"""Tools that need a human's confirmation ask through elicitation, in both eras, over HTTP and stdio."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import anyio
import pytest
from mcp import types
from mcp.client.context import ClientRequestContext
from server_harness import DEADLINE, ERAS, Era, connect, first_text, http_server, stdio_params

pytestmark = pytest.mark.anyio

Action = Literal["accept", "decline", "cancel"]
REJECTED = "This tool call is rejected."
REQUIRED = "This tool call requires confirmation"


class Human:
    """An elicitation callback that answers with the given actions in turn, and keeps what it was asked."""

    def __init__(self, actions: Iterable[Action]) -> None:
        self._actions = iter(actions)
        self.asked: list[types.ElicitRequestParams] = []

    async def __call__(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        del context
        self.asked.append(params)
        action = next(self._actions)
        content: dict[str, Any] | None = {"confirm": True} if action == "accept" else None
        return types.ElicitResult(action=action, content=content)


async def _remove(client: Any, marker: anyio.Path) -> types.CallToolResult:
    with anyio.fail_after(DEADLINE):
        return await client.call_tool("remove_item", {"item": "photos", "marker": str(marker)})


@pytest.mark.parametrize("era", ERAS)
async def test_an_accepted_confirmation_runs_the_tool_with_its_confirmation(era: Era, marker: anyio.Path) -> None:
    human = Human(["accept"])
    async with http_server() as base_url, connect("http", era, base_url, elicitation_callback=human) as client:
        result = await _remove(client, marker)
    assert not result.is_error, result.content
    assert result.structured_content == {"removed": "photos", "confirmed": True}
    assert await marker.read_text() == "photos"
    (asked,) = human.asked
    assert isinstance(asked, types.ElicitRequestFormParams)
    assert "remove_item(item='photos'" in asked.message
    assert asked.requested_schema["required"] == ["confirm"]


@pytest.mark.parametrize("era", ERAS)
async def test_a_confirmed_tool_sees_the_payload_it_asked_to_have_confirmed(era: Era, marker: anyio.Path) -> None:
    human = Human(["accept"])
    async with http_server() as base_url, connect("http", era, base_url, elicitation_callback=human) as client:
        with anyio.fail_after(DEADLINE):
            result = await client.call_tool("transfer", {"amount": 30, "marker": str(marker)})
    assert result.structured_content == {
        "transferred": 30,
        "payload": {"amount": 30, "to": "bob"},
        "confirmed": True,
    }
    assert "Transfer 30 EUR?" in human.asked[0].message
    assert await marker.read_text() == "30"


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_a_declined_or_cancelled_confirmation_rejects_the_call_without_running_the_tool(
    action: Action, era: Era, marker: anyio.Path
) -> None:
    async with (
        http_server() as base_url,
        connect("http", era, base_url, elicitation_callback=Human([action])) as client,
    ):
        result = await _remove(client, marker)
        still_serving = await client.call_tool("add", {"a": 1, "b": 1})
    assert result.is_error
    assert first_text(result) == REJECTED
    assert not await marker.exists()
    assert still_serving.structured_content == {"result": 2}


@pytest.mark.parametrize("era", ERAS)
async def test_a_client_that_cannot_elicit_gets_an_error_saying_why_and_the_tool_does_not_run(
    era: Era, marker: anyio.Path
) -> None:
    async with http_server() as base_url, connect("http", era, base_url) as client:
        result = await _remove(client, marker)
    assert result.is_error
    text = first_text(result)
    assert text.startswith(REQUIRED)
    assert "did not declare the 'elicitation' capability" in text
    assert not await marker.exists()


@pytest.mark.parametrize("mode", ["stateless", "json_response"])
async def test_without_a_back_channel_a_handshake_era_confirmation_fails_saying_why_and_a_modern_one_works(
    mode: str, tmp_path: Path
) -> None:
    legacy_marker, modern_marker = anyio.Path(tmp_path / "legacy"), anyio.Path(tmp_path / "modern")
    async with http_server(stateless=mode == "stateless", json_response=mode == "json_response") as base_url:
        async with connect("http", "legacy", base_url, elicitation_callback=Human(["accept"])) as client:
            refused = await _remove(client, legacy_marker)
        async with connect("http", "modern", base_url, elicitation_callback=Human(["accept"])) as client:
            confirmed = await _remove(client, modern_marker)
    assert refused.is_error
    assert first_text(refused).startswith(REQUIRED)
    assert "no channel for server-to-client requests" in first_text(refused)
    assert not await legacy_marker.exists()
    assert confirmed.structured_content == {"removed": "photos", "confirmed": True}
    assert await modern_marker.read_text() == "photos"


@pytest.mark.parametrize("era", ERAS)
async def test_confirmations_work_over_stdio(era: Era, state_file: Path, tmp_path: Path) -> None:
    accepted, declined = anyio.Path(tmp_path / "accepted"), anyio.Path(tmp_path / "declined")
    human = Human(["accept", "decline"])
    async with connect("stdio", era, stdio_params(state_file), elicitation_callback=human) as client:
        ok = await _remove(client, accepted)
        rejected = await _remove(client, declined)
    assert ok.structured_content == {"removed": "photos", "confirmed": True}
    assert await accepted.read_text() == "photos"
    assert first_text(rejected) == REJECTED
    assert not await declined.exists()


async def test_a_stdio_client_that_cannot_elicit_gets_the_error_and_the_tool_does_not_run(
    state_file: Path, marker: anyio.Path
) -> None:
    async with connect("stdio", "legacy", stdio_params(state_file)) as client:
        refused = await _remove(client, marker)
    assert refused.is_error
    assert first_text(refused).startswith(REQUIRED)
    assert not await marker.exists()
