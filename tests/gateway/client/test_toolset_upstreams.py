"""`McpToolset` against our server mode and the SDK's `MCPServer`, over stdio, SSE and streamable HTTP, in both eras.

One toolset per (server, transport, era) serves every test of this module (a stdio child costs a second to
start); tests that change the toolset's filter, prefix or confirmation policy put it back afterwards.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import AsyncGenerator, Generator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from client_harness import DEADLINE, Kind, Mode, Transport, upstream, wait_for_file
from upstream_tools import PNG

from gateway.client import McpTool, McpToolset
from gateway.tools import ProgressLog, ToolConfirmation, ToolContext
from gateway.tools.confirmation import CONFIRMATION_REJECTED, CONFIRMATION_REQUIRED
from tests.support.client_callbacks import ClientCallbacks

COMBOS = [
    (kind, transport, mode)
    for kind in ("ours", "sdk")
    for transport in ("stdio", "sse", "http")
    for mode in ("legacy", "auto")
]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module scope, so that one toolset (and its stdio child) serves every test of a combination."""
    return "asyncio"


@dataclass
class Connected:
    kind: Kind
    transport: Transport
    mode: Mode
    toolset: McpToolset
    recorder: ClientCallbacks
    tmp_path: Path

    async def tool(self, name: str) -> McpTool:
        tools = {tool.name: tool for tool in await self.toolset.get_tools()}
        tool = tools[name]
        assert isinstance(tool, McpTool)
        return tool

    async def run(self, name: str, args: dict[str, Any], context: ToolContext | None = None) -> dict[str, Any]:
        with anyio.fail_after(DEADLINE):
            return await (await self.tool(name)).run_async(args=args, tool_context=context or ToolContext())


@pytest.fixture(scope="module", params=COMBOS, ids=["-".join(combo) for combo in COMBOS])
async def connected(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncGenerator[Connected]:
    kind, transport, mode = request.param
    tmp_path = tmp_path_factory.mktemp("-".join(request.param))
    recorder = ClientCallbacks()
    async with upstream(kind, transport, tmp_path) as params:
        toolset = McpToolset(
            connection_params=params,
            mode=mode,
            elicitation_callback=recorder.elicit,
            sampling_callback=recorder.sample,
            progress_callback=recorder.on_progress,
        )
        async with toolset:
            yield Connected(kind, transport, mode, toolset, recorder, tmp_path)


@contextmanager
def configured(toolset: McpToolset, **options: Any) -> Generator[None]:
    """Set toolset options for one test, then put the old values back."""
    saved = {name: getattr(toolset, name) for name in options}
    for name, value in options.items():
        setattr(toolset, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(toolset, name, value)


def calls(marker: Path) -> int:
    return len(marker.read_text().splitlines()) if marker.exists() else 0


@pytest.mark.anyio
async def test_get_tools_gives_mcp_tools_whose_declarations_keep_the_raw_schemas(connected: Connected) -> None:
    with anyio.fail_after(DEADLINE):
        tools = await connected.toolset.get_tools()
    names = [tool.name for tool in tools]
    assert names == sorted(names)
    assert {"add", "place_order", "weather", "tiny_image", "ask_name", "summarize"} <= set(names)
    for tool in tools:
        assert isinstance(tool, McpTool)
        declaration = tool.get_declaration()
        assert declaration is not None
        assert declaration.name == tool.name == tool.raw_mcp_tool.name
        raw = tool.raw_mcp_tool.input_schema
        # A tool without parameters is declared without a schema (the adapters' round-trip form).
        expected = None if raw == {"type": "object", "properties": {}} else raw
        assert declaration.parameters_json_schema == expected
    order = next(tool for tool in tools if tool.name == "place_order")
    assert isinstance(order, McpTool)
    assert "$defs" in order.raw_mcp_tool.input_schema


@pytest.mark.anyio
async def test_a_name_list_filter_matches_upstream_names_before_the_prefix(connected: Connected) -> None:
    with configured(connected.toolset, tool_filter=["add", "weather"], tool_name_prefix="up"):
        with anyio.fail_after(DEADLINE):
            tools = await connected.toolset.get_tools_with_prefix()
            assert sorted(tool.name for tool in tools) == ["up_add", "up_weather"]
            add = next(tool for tool in tools if tool.name == "up_add")
            declaration = add.get_declaration()
            assert declaration is not None
            assert declaration.name == "up_add"
            assert isinstance(add, McpTool)
            assert add.raw_mcp_tool.name == "add"
            assert await add.run_async(args={"a": 2, "b": 3}, tool_context=ToolContext()) == {"result": 5}


@pytest.mark.anyio
async def test_a_predicate_filter_sees_upstream_names(connected: Connected) -> None:
    seen: list[str] = []

    def only_add(tool: Any, readonly_context: Any = None) -> bool:
        del readonly_context
        seen.append(tool.name)
        return tool.name == "add"

    with configured(connected.toolset, tool_filter=only_add, tool_name_prefix="up"), anyio.fail_after(DEADLINE):
        tools = await connected.toolset.get_tools_with_prefix()
    assert [tool.name for tool in tools] == ["up_add"]
    assert "add" in seen
    assert not any(name.startswith("up_") for name in seen)


@pytest.mark.anyio
async def test_a_result_marked_is_error_becomes_an_error_dict(connected: Connected) -> None:
    response = await connected.run("fail", {"reason": "the oven is cold"})
    assert set(response) == {"error"}
    assert "the oven is cold" in response["error"]


@pytest.mark.anyio
async def test_structured_content_is_the_response(connected: Connected) -> None:
    assert await connected.run("weather", {"city": "Paris"}) == {"city": "Paris", "celsius": 21}


@pytest.mark.anyio
async def test_media_stays_a_typed_part(connected: Connected) -> None:
    response = await connected.run("tiny_image", {})
    [part] = response["parts"]
    assert part["type"] == "image"
    assert part["mime_type"] == "image/png"
    assert base64.b64decode(part["data"]) == PNG


@pytest.mark.anyio
async def test_an_object_argument_with_defs_reaches_the_upstream(connected: Connected) -> None:
    response = await connected.run("place_order", {"order": {"size": "large", "toppings": ["basil"]}})
    assert response == {"result": "large pizza with 1 toppings"}


@pytest.mark.anyio
async def test_progress_reaches_the_progress_callback_and_the_tool_context_sink(connected: Connected) -> None:
    connected.recorder.progress.clear()
    sink = ProgressLog()
    response = await connected.run("count_up", {"steps": 3}, ToolContext(progress_sink=sink))
    assert response == {"counted": 3}
    messages = [message for _, _, message in connected.recorder.progress]
    assert messages == ["step 1 of 3", "step 2 of 3", "step 3 of 3"]
    updates = cast("list[dict[str, Any]]", sink.updates)
    assert [update["message"] for update in updates] == messages
    assert [update["progress"] for update in updates] == sorted(update["progress"] for update in updates)


@pytest.mark.anyio
async def test_progress_without_a_message_arrives_without_one(connected: Connected) -> None:
    connected.recorder.progress.clear()
    sink = ProgressLog()
    assert await connected.run("quiet_steps", {}, ToolContext(progress_sink=sink)) == {"result": "quiet"}
    assert connected.recorder.progress == [(1, 2, None), (2, 2, None)]
    assert sink.updates == [{"progress": 1, "total": 2}, {"progress": 2, "total": 2}]


@pytest.mark.anyio
async def test_upstream_elicitation_reaches_the_elicitation_callback(connected: Connected) -> None:
    connected.recorder.elicitations.clear()
    assert await connected.run("ask_name", {}) == {"action": "accept", "name": "Ada"}
    [asked] = connected.recorder.elicitations
    assert asked.message == "What is your name?"


@pytest.mark.anyio
async def test_upstream_sampling_reaches_the_sampling_callback(connected: Connected) -> None:
    connected.recorder.samplings.clear()
    assert await connected.run("summarize", {"text": "a long story"}) == {"result": "a short summary"}
    [asked] = connected.recorder.samplings
    content = asked.messages[0].content
    assert getattr(content, "text", None) == "Summarise: a long story"


@pytest.mark.anyio
async def test_require_confirmation_asks_before_any_upstream_call(connected: Connected) -> None:
    marker = connected.tmp_path / "confirm-bool.txt"
    with configured(connected.toolset, require_confirmation=True):
        asking = ToolContext()
        response = await connected.run("record_call", {"marker": str(marker)}, asking)
        assert response == {"error": CONFIRMATION_REQUIRED}
        assert asking.function_call_id in asking.actions.requested_tool_confirmations
        assert asking.actions.skip_summarization is True
        assert calls(marker) == 0

        rejected = ToolContext(tool_confirmation=ToolConfirmation(confirmed=False))
        assert await connected.run("record_call", {"marker": str(marker)}, rejected) == {"error": CONFIRMATION_REJECTED}
        assert calls(marker) == 0

        approved = ToolContext(tool_confirmation=ToolConfirmation(confirmed=True))
        assert await connected.run("record_call", {"marker": str(marker)}, approved) == {"result": "recorded"}
        assert calls(marker) == 1


@pytest.mark.anyio
async def test_a_confirmation_predicate_decides_per_call(connected: Connected) -> None:
    risky = connected.tmp_path / "risky.txt"
    harmless = connected.tmp_path / "harmless.txt"

    def needs_confirmation(marker: str, tool_context: ToolContext) -> bool:
        assert isinstance(tool_context, ToolContext)
        return marker.endswith("risky.txt")

    with configured(connected.toolset, require_confirmation=needs_confirmation):
        assert await connected.run("record_call", {"marker": str(harmless)}) == {"result": "recorded"}
        assert await connected.run("record_call", {"marker": str(risky)}) == {"error": CONFIRMATION_REQUIRED}
    assert calls(harmless) == 1
    assert calls(risky) == 0


@pytest.mark.anyio
async def test_cancelling_the_awaiting_task_cancels_the_upstream_call(connected: Connected) -> None:
    marker = connected.tmp_path / f"cancelled-{connected.mode}.txt"
    connected.recorder.started = anyio.Event()
    with anyio.fail_after(DEADLINE):
        tool = await connected.tool("wait_forever")
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: tool.run_async(args={"marker": str(marker)}, tool_context=ToolContext()))
            await connected.recorder.started.wait()
            tg.cancel_scope.cancel()
    assert await wait_for_file(marker) == "cancelled"
    # The session is still good for the next call.
    assert await connected.run("add", {"a": 1, "b": 1}) == {"result": 2}


@pytest.mark.anyio
async def test_the_session_speaks_the_era_it_was_asked_for(connected: Connected) -> None:
    with anyio.fail_after(DEADLINE):
        session = await connected.toolset.session()
    expected = "2025-11-25" if connected.mode == "legacy" else "2026-07-28"
    assert session.client.protocol_version == expected


@pytest.mark.anyio
async def test_a_call_without_a_tool_context_ignores_progress_quietly(
    connected: Connected, caplog: pytest.LogCaptureFixture
) -> None:
    connected.recorder.progress.clear()
    tool = await connected.tool("count_up")
    with anyio.fail_after(DEADLINE):
        # ADK's documented MCP-server recipe calls tools with `tool_context=None`.
        response = await tool.run_async(args={"steps": 2}, tool_context=None)  # pyright: ignore[reportArgumentType]
    assert response == {"counted": 2}
    assert [message for _, _, message in connected.recorder.progress] == ["step 1 of 2", "step 2 of 2"]
    # The SDK logs (and swallows) an exception raised in a progress callback: there must be none.
    assert [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR] == []
