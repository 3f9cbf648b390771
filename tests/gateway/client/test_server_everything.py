"""`@modelcontextprotocol/server-everything` (the TypeScript SDK's demo server) as an upstream over SSE and HTTP.

Its sampling and elicitation tools are registered only for clients that declare those capabilities, which the
toolset does when it has the callbacks.
"""

from __future__ import annotations

import subprocess
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from client_harness import DEADLINE
from mcp import types
from mcp.client.context import ClientRequestContext

from gateway.client import McpTool, McpToolset, SseConnectionParams, StreamableHTTPConnectionParams
from gateway.client.connection import ConnectionParams
from gateway.tools import ProgressLog, ToolContext
from tests.conformance.toolchain import ensure_toolchain
from tests.support.client_callbacks import ClientCallbacks
from tests.support.loopback import free_port, wait_for_port


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module scope: one server-everything process per transport serves every test."""
    return "asyncio"


class FormFiller(ClientCallbacks):
    """Accepts every form, filling each field with its default (or a plausible value)."""

    async def elicit(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        del context
        self.elicitations.append(params)
        if not isinstance(params, types.ElicitRequestFormParams):
            return types.ElicitResult(action="decline")
        content: dict[str, Any] = {}
        for name, schema in params.requested_schema.get("properties", {}).items():
            if "default" in schema:
                content[name] = schema["default"]
            elif schema.get("type") == "string" and "format" not in schema:
                content[name] = self.name
        return types.ElicitResult(action="accept", content=content)


@dataclass
class Everything:
    toolset: McpToolset
    recorder: FormFiller

    async def run(self, name: str, args: dict[str, Any], context: ToolContext | None = None) -> dict[str, Any]:
        with anyio.fail_after(DEADLINE):
            tools = {tool.name: tool for tool in await self.toolset.get_tools()}
            tool = tools[name]
            assert isinstance(tool, McpTool)
            return await tool.run_async(args=args, tool_context=context or ToolContext())


@pytest.fixture(scope="module", params=["sse", "streamableHttp"])
async def everything(request: pytest.FixtureRequest) -> AsyncGenerator[Everything]:
    toolchain = ensure_toolchain()
    port = free_port()
    env = toolchain.env() | {"PORT": str(port)}
    command = [str(toolchain.node), str(toolchain.server_everything), request.param]
    async with await anyio.open_process(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    ) as process:
        try:
            await wait_for_port(port, DEADLINE)
            params: ConnectionParams = (
                SseConnectionParams(url=f"http://127.0.0.1:{port}/sse")
                if request.param == "sse"
                else StreamableHTTPConnectionParams(url=f"http://127.0.0.1:{port}/mcp")
            )
            recorder = FormFiller()
            toolset = McpToolset(
                connection_params=params,
                elicitation_callback=recorder.elicit,
                sampling_callback=recorder.sample,
                progress_callback=recorder.on_progress,
            )
            async with toolset:
                yield Everything(toolset, recorder)
        finally:
            process.terminate()
            with anyio.move_on_after(5, shield=True):
                await process.wait()


@pytest.mark.anyio
async def test_the_session_falls_back_to_the_handshake_era(everything: Everything) -> None:
    with anyio.fail_after(DEADLINE):
        session = await everything.toolset.session()
    assert session.client.protocol_version in ("2025-06-18", "2025-11-25")


@pytest.mark.anyio
async def test_capability_gated_tools_appear_because_the_callbacks_are_set(everything: Everything) -> None:
    with anyio.fail_after(DEADLINE):
        names = {tool.name for tool in await everything.toolset.get_tools()}
    assert {
        "echo",
        "trigger-long-running-operation",
        "trigger-elicitation-request",
        "trigger-sampling-request",
    } <= names


@pytest.mark.anyio
async def test_a_long_running_operation_reports_its_progress(everything: Everything) -> None:
    everything.recorder.progress.clear()
    sink = ProgressLog()
    response = await everything.run(
        "trigger-long-running-operation", {"duration": 0.3, "steps": 3}, ToolContext(progress_sink=sink)
    )
    assert "error" not in response
    assert [progress for progress, _, _ in everything.recorder.progress] == [1, 2, 3]
    assert [total for _, total, _ in everything.recorder.progress] == [3, 3, 3]
    assert len(sink.updates) == 3


@pytest.mark.anyio
async def test_an_elicitation_request_reaches_the_elicitation_callback(everything: Everything) -> None:
    everything.recorder.elicitations.clear()
    response = await everything.run("trigger-elicitation-request", {})
    [asked] = everything.recorder.elicitations
    assert isinstance(asked, types.ElicitRequestFormParams)
    assert asked.requested_schema["required"] == ["name"]
    text = "\n".join(response["result"])
    assert "User provided the requested information" in text
    assert "- Name: Ada" in text
    assert "- Favorite Integer: 42" in text


@pytest.mark.anyio
async def test_a_sampling_request_reaches_the_sampling_callback(everything: Everything) -> None:
    everything.recorder.samplings.clear()
    response = await everything.run("trigger-sampling-request", {"prompt": "Name a colour", "maxTokens": 20})
    [asked] = everything.recorder.samplings
    assert "Name a colour" in str(asked.messages[0].content)
    assert "a short summary" in str(response)
