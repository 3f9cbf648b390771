"""A modern (2026-07-28) client's answer counts only for a question this server asked in the same call.

The answers of a call's earlier rounds travel in its sealed `requestState`; `inputResponses` sent without being
asked (on a first round, under another key, from another session) are ignored, so the question is still asked.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError, types
from mcp.client.context import ClientRequestContext
from server_harness import DEADLINE, connect, first_text, http_server

from gateway.server import SESSION_META_KEY

pytestmark = pytest.mark.anyio

ACCEPT = types.ElicitResult(action="accept", content={"confirm": True})
REJECTED = "This tool call is rejected."


class Declining:
    """An elicitation callback that refuses everything and counts what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        del context
        self.asked.append(params.message)
        return types.ElicitResult(action="decline")


def _modern(base_url: str) -> AbstractAsyncContextManager[Client]:
    """A modern client that can be asked (it declares elicitation) and declines whatever it is asked."""
    return connect("http", "modern", base_url, elicitation_callback=Declining())


def _arguments(tool: str, marker: anyio.Path) -> dict[str, Any]:
    return {"item": "photos", "marker": str(marker)} if tool == "remove_item" else {"amount": 30, "marker": str(marker)}


async def _first_round(
    client: Client, tool: str, arguments: dict[str, Any], **options: Any
) -> types.InputRequiredResult:
    with anyio.fail_after(DEADLINE):
        outcome = await client.session.call_tool(tool, arguments, allow_input_required=True, **options)
    assert isinstance(outcome, types.InputRequiredResult), outcome
    return outcome


@pytest.mark.parametrize("tool", ["remove_item", "transfer"])
@pytest.mark.parametrize("key", ["elicit-0", "elicit-1", "confirm"])
async def test_an_answer_sent_before_the_question_was_asked_is_ignored_and_the_question_is_asked(
    tool: str, key: str, marker: anyio.Path
) -> None:
    human = Declining()
    async with http_server() as base_url, connect("http", "modern", base_url, elicitation_callback=human) as client:
        with anyio.fail_after(DEADLINE):
            result = await client.call_tool(tool, _arguments(tool, marker), input_responses={key: ACCEPT})
    assert len(human.asked) == 1
    assert result.is_error
    assert first_text(result) == REJECTED
    assert not await marker.exists()


async def test_an_unsolicited_answer_does_not_stand_in_for_an_elicitation_either() -> None:
    human = Declining()
    unasked = types.ElicitResult(action="accept", content={"name": "Mallory"})
    async with http_server() as base_url, connect("http", "modern", base_url, elicitation_callback=human) as client:
        with anyio.fail_after(DEADLINE):
            result = await client.call_tool("ask_name", {}, input_responses={"elicit-0": unasked})
    assert human.asked == ["What is your name?"]
    assert result.structured_content == {"action": "decline", "name": None}


async def test_the_answer_to_the_question_asked_runs_the_tool(marker: anyio.Path) -> None:
    async with http_server() as base_url, _modern(base_url) as client:
        asked = await _first_round(client, "remove_item", _arguments("remove_item", marker))
        (key,) = asked.input_requests
        with anyio.fail_after(DEADLINE):
            result = await client.session.call_tool(
                "remove_item",
                _arguments("remove_item", marker),
                input_responses={key: ACCEPT},
                request_state=asked.request_state,
            )
    assert isinstance(result, types.CallToolResult)
    assert result.structured_content == {"removed": "photos", "confirmed": True}


async def test_an_answer_under_a_key_that_was_not_asked_is_ignored(marker: anyio.Path) -> None:
    async with http_server() as base_url, _modern(base_url) as client:
        asked = await _first_round(client, "remove_item", _arguments("remove_item", marker))
        with anyio.fail_after(DEADLINE):
            again = await client.session.call_tool(
                "remove_item",
                _arguments("remove_item", marker),
                input_responses={"elicit-7": ACCEPT},
                request_state=asked.request_state,
                allow_input_required=True,
            )
    assert isinstance(again, types.InputRequiredResult)
    assert not await marker.exists()


async def test_an_answered_round_cannot_be_replayed_for_other_arguments(marker: anyio.Path) -> None:
    async with http_server() as base_url, _modern(base_url) as client:
        asked = await _first_round(client, "remove_item", _arguments("remove_item", marker))
        (key,) = asked.input_requests
        with anyio.fail_after(DEADLINE), pytest.raises(MCPError) as refused:
            await client.session.call_tool(
                "remove_item",
                {"item": "everything", "marker": str(marker)},
                input_responses={key: ACCEPT},
                request_state=asked.request_state,
            )
    assert refused.value.error.code == types.INVALID_PARAMS
    assert not await marker.exists()


async def test_a_round_of_one_session_cannot_be_answered_from_another_session(marker: anyio.Path) -> None:
    arguments = _arguments("remove_item", marker)
    async with http_server() as base_url, _modern(base_url) as client:
        asked = await _first_round(client, "remove_item", arguments, meta={SESSION_META_KEY: "session-of-alice"})
        (key,) = asked.input_requests
        with anyio.fail_after(DEADLINE), pytest.raises(MCPError) as refused:
            await client.session.call_tool(
                "remove_item",
                arguments,
                input_responses={key: ACCEPT},
                request_state=asked.request_state,
                meta={SESSION_META_KEY: "session-of-mallory"},
            )
    assert refused.value.error.code == types.INVALID_PARAMS
    assert "session" in refused.value.error.message
    assert not await marker.exists()


async def test_an_answered_round_cannot_be_replayed_to_run_the_tool_again(marker: anyio.Path) -> None:
    arguments = _arguments("remove_item", marker)
    async with http_server() as base_url, _modern(base_url) as client:
        asked = await _first_round(client, "remove_item", arguments)
        (key,) = asked.input_requests
        answered: dict[str, Any] = {"input_responses": {key: ACCEPT}, "request_state": asked.request_state}
        with anyio.fail_after(DEADLINE):
            first = await client.session.call_tool("remove_item", arguments, **answered)
            assert isinstance(first, types.CallToolResult)
            assert first.structured_content == {"removed": "photos", "confirmed": True}
            await marker.unlink()
            with pytest.raises(MCPError) as refused:
                await client.session.call_tool("remove_item", arguments, **answered)
    assert refused.value.error.code == types.INVALID_PARAMS
    assert "already" in refused.value.error.message
    assert not await marker.exists()


async def test_one_answered_round_sent_several_times_at_once_runs_the_tool_once(marker: anyio.Path) -> None:
    arguments = _arguments("remove_item", marker)
    outcomes: list[types.CallToolResult | types.ErrorData] = []
    async with http_server() as base_url, _modern(base_url) as client:
        asked = await _first_round(client, "remove_item", arguments)
        (key,) = asked.input_requests
        answered: dict[str, Any] = {"input_responses": {key: ACCEPT}, "request_state": asked.request_state}

        async def send() -> None:
            try:
                outcomes.append(await client.session.call_tool("remove_item", arguments, **answered))
            except MCPError as refused:
                outcomes.append(refused.error)

        with anyio.fail_after(DEADLINE):
            async with anyio.create_task_group() as tg:
                for _ in range(4):
                    tg.start_soon(send)
    ran = [outcome for outcome in outcomes if isinstance(outcome, types.CallToolResult)]
    refused = [outcome for outcome in outcomes if isinstance(outcome, types.ErrorData)]
    assert len(ran) == 1, outcomes
    assert [(error.code, "already" in error.message) for error in refused] == [(types.INVALID_PARAMS, True)] * 3
