"""The era an upstream session speaks is chosen so that nothing is lost (`gateway.hub.era`).

The upstream is the conformance fixture started with `--push`: an SDK `MCPServer` whose tools ask with
`ctx.elicit` and `ctx.session.create_message`, which only a handshake-era session can answer.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from hub_harness import DEADLINE, ROOT, SLOW_START, FormFiller, Mode, connect, gateway_http, text_of, write_config
from mcp import Client, MCPError

pytestmark = pytest.mark.anyio

PUSH_UPSTREAM: dict[str, Any] = {
    "command": sys.executable,
    "args": ["-I", str(ROOT / "tests/conformance/fixture_upstream.py"), "stdio", "--push"],
    "prefix": "",
    **SLOW_START,
}
PUSH_NO_BACK_CHANNEL = "no back-channel"


async def ask_name_and_sample(base_url: str, mode: Mode) -> tuple[str, str, FormFiller]:
    downstream = FormFiller()
    with anyio.fail_after(DEADLINE):
        async with connect(base_url, mode, **downstream.callbacks()) as client:
            asked = await answer_of(client, "test_elicitation", {"message": "Who are you?"})
            sampled = await answer_of(client, "test_sampling", {"prompt": "Name a colour"})
    return asked, sampled, downstream


async def answer_of(client: Client, name: str, arguments: dict[str, Any]) -> str:
    """The text of a call's result, or of its JSON-RPC error (the upstream's, passed on by the gateway)."""
    try:
        return text_of(await client.call_tool(name, arguments))
    except MCPError as exc:
        return exc.message


async def test_a_handshake_era_client_answers_an_upstream_that_pushes_its_questions(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"fx": PUSH_UPSTREAM})
    async with gateway_http(config) as base_url:
        asked, sampled, downstream = await ask_name_and_sample(base_url, "legacy")
    # The isolated upstream session mirrors the client's handshake era, so the upstream's pushes have a channel.
    assert asked.startswith("User response: action=accept"), asked
    assert sampled == "LLM response: Teal."
    assert downstream.asked == ["Who are you?"]


async def test_a_shared_upstream_session_speaks_the_handshake_era_for_a_modern_client_too(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"fx": PUSH_UPSTREAM | {"sessionPolicy": "shared"}})
    async with gateway_http(config) as base_url:
        asked, sampled, downstream = await ask_name_and_sample(base_url, "auto")
    # The modern client answers in rounds (InputRequiredResult); the upstream pushed its questions.
    assert asked.startswith("User response: action=accept"), asked
    assert sampled == "LLM response: Teal."
    assert downstream.asked == ["Who are you?"]


async def test_an_isolated_session_of_a_modern_client_speaks_the_modern_era(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"fx": PUSH_UPSTREAM})
    async with gateway_http(config) as base_url:
        asked, _, downstream = await ask_name_and_sample(base_url, "auto")
    # Mirrored: a modern upstream session, where this upstream's push questions have no channel (as direct).
    assert PUSH_NO_BACK_CHANNEL in asked
    assert downstream.asked == []


async def test_protocol_version_in_the_config_overrides_the_choice(tmp_path: Path) -> None:
    modern = write_config(tmp_path, {"fx": PUSH_UPSTREAM | {"protocolVersion": "2026-07-28"}})
    async with gateway_http(modern) as base_url:
        asked, _, _ = await ask_name_and_sample(base_url, "legacy")
    assert PUSH_NO_BACK_CHANNEL in asked

    handshake = write_config(tmp_path, {"fx": PUSH_UPSTREAM | {"protocolVersion": "2025-11-25"}})
    async with gateway_http(handshake) as base_url:
        asked, _, _ = await ask_name_and_sample(base_url, "auto")
    assert asked.startswith("User response: action=accept"), asked
