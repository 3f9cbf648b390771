"""A modern (2026-07-28) upstream's questions reach a modern client as the upstream asked them.

The upstream is the conformance fixture (an SDK `MCPServer`) over stdio, pinned to 2026-07-28: its
`test_input_required_result_*` tools and prompt end a round with an `InputRequiredResult` under keys of their own
choosing and read the answers (and their own `requestState`) on the next round. Through the gateway the client must
see those keys and requests unchanged, and the upstream must see the client's answers and capabilities.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

import anyio
import pytest
from hub_harness import DEADLINE, ROOT, Mode, connect, gateway_http, text_of, write_config
from mcp import Client, MCPError, types

pytestmark = pytest.mark.anyio

MODERN_UPSTREAM: dict[str, Any] = {
    "command": sys.executable,
    "args": ["-I", str(ROOT / "tests/conformance/fixture_upstream.py"), "stdio"],
    "prefix": "",
    "protocolVersion": "2026-07-28",
    "sessionPolicy": "shared",
    "listTimeout": DEADLINE,
}


def accept(**content: Any) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content=content)


async def call_round(
    client: Client, name: str, responses: dict[str, Any] | None = None, state: str | None = None
) -> types.CallToolResult | types.InputRequiredResult:
    """One round of `tools/call`, its `InputRequiredResult` returned rather than answered."""
    return await client.session.call_tool(
        name, {}, input_responses=responses, request_state=state, allow_input_required=True
    )


@pytest.fixture
async def gateway_url(tmp_path: Any) -> Any:
    async with gateway_http(write_config(tmp_path, {"fx": MODERN_UPSTREAM})) as base_url:
        yield base_url


async def test_an_upstream_question_reaches_the_client_under_the_upstream_key(gateway_url: str) -> None:
    with anyio.fail_after(DEADLINE * 2):
        async with connect(gateway_url, "auto") as client:
            asked = await call_round(client, "test_input_required_result_elicitation")
            assert isinstance(asked, types.InputRequiredResult)
            answered = await call_round(
                client,
                "test_input_required_result_elicitation",
                {"user_name": accept(name="Alice")},
                asked.request_state,
            )
    assert list(asked.input_requests) == ["user_name"]
    request = asked.input_requests["user_name"]
    assert isinstance(request, types.ElicitRequest)
    assert request.params.message == "What is your name?"
    assert isinstance(answered, types.CallToolResult)
    assert text_of(answered) == "Hello, Alice!"


async def test_several_questions_of_one_round_and_the_upstream_state_cross_together(gateway_url: str) -> None:
    with anyio.fail_after(DEADLINE * 2):
        async with connect(gateway_url, "auto") as client:
            asked = await call_round(client, "test_input_required_result_multiple_inputs")
            assert isinstance(asked, types.InputRequiredResult)
            answers: dict[str, Any] = {
                "user_name": accept(name="Alice"),
                "greeting": types.CreateMessageResult(
                    role="assistant", content=types.TextContent(text="Hi"), model="m", stop_reason="endTurn"
                ),
                "client_roots": types.ListRootsResult(roots=[types.Root(uri="file:///srv")]),
            }
            answered = await call_round(
                client, "test_input_required_result_multiple_inputs", answers, asked.request_state
            )
    assert sorted(asked.input_requests) == ["client_roots", "greeting", "user_name"]
    # The upstream's own state crossed the client sealed inside the gateway's: it is not what the client holds.
    assert asked.request_state is not None
    assert "asked-three" not in asked.request_state
    assert isinstance(answered, types.CallToolResult)
    assert text_of(answered) == "Hi Alice (1 roots)"


async def test_the_upstream_sees_the_capabilities_the_client_declared(gateway_url: str) -> None:
    async def sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        del context, params
        return types.CreateMessageResult(role="assistant", content=types.TextContent(text="Hi"), model="m")

    with anyio.fail_after(DEADLINE * 2):
        # A client that can sample but not elicit (the gateway itself could relay both): asked only to sample.
        async with connect(gateway_url, "auto", sampling_callback=sample) as client:
            asked = await call_round(client, "test_input_required_result_capabilities")
    assert isinstance(asked, types.InputRequiredResult)
    assert list(asked.input_requests) == ["greeting"]


async def test_a_client_without_a_needed_capability_gets_the_upstream_error(gateway_url: str) -> None:
    with anyio.fail_after(DEADLINE * 2):
        async with connect(gateway_url, "auto") as client:
            with pytest.raises(MCPError) as refused:
                await call_round(client, "test_missing_capability")
    assert refused.value.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY
    assert refused.value.error.data == {"requiredCapabilities": {"sampling": {}}}


async def test_a_tampered_state_is_refused(gateway_url: str) -> None:
    with anyio.fail_after(DEADLINE * 2):
        async with connect(gateway_url, "auto") as client:
            asked = await call_round(client, "test_input_required_result_tampered_state")
            assert isinstance(asked, types.InputRequiredResult)
            with pytest.raises(MCPError) as refused:
                await call_round(
                    client,
                    "test_input_required_result_tampered_state",
                    {"confirm": accept(ok=True)},
                    f"{asked.request_state}-TAMPERED",
                )
    assert refused.value.code == types.INVALID_PARAMS


async def test_a_prompt_question_reaches_the_client_and_its_answer_the_upstream(gateway_url: str) -> None:
    with anyio.fail_after(DEADLINE * 2):
        async with connect(gateway_url, "auto") as client:
            name = "test_input_required_result_prompt"
            asked = await client.session.get_prompt(name, allow_input_required=True)
            assert isinstance(asked, types.InputRequiredResult)
            rendered = await client.session.get_prompt(
                name,
                input_responses={"user_context": accept(context="tests")},
                request_state=asked.request_state,
                allow_input_required=True,
            )
    assert list(asked.input_requests) == ["user_context"]
    assert isinstance(rendered, types.GetPromptResult)
    content = rendered.messages[0].content
    assert isinstance(content, types.TextContent)
    assert content.text == "Use this context: tests"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_json_schema_2020_12_input_schema_crosses_unchanged(gateway_url: str, mode: Mode) -> None:
    """Composition, conditionals, `$anchor`, `$defs` and `$schema` (SEP-1613, SEP-2106) reach the client as listed."""
    upstream = _load_fixture()
    with anyio.fail_after(DEADLINE * 2):
        async with connect(gateway_url, mode) as client:
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert listed["json_schema_2020_12_tool"].input_schema == upstream.JSON_SCHEMA_TOOL_SCHEMA


def _load_fixture() -> Any:
    path = ROOT / "tests/conformance/fixture_upstream.py"
    spec = importlib.util.spec_from_file_location("relayed_rounds_fixture_upstream", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
