"""`forward_client_requests`: the upstream's elicitation and sampling go to the client of the call in flight."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from client_harness import DEADLINE, http_params, our_http_server
from mcp import types

from gateway.client import McpTool, McpToolset
from gateway.tools import ToolContext


class DownstreamClient:
    """The `ClientFeatures` of a downstream MCP client, answering like a person and a model would."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.asked: list[str] = []

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        del progress, total, message

    async def log(self, level: types.LoggingLevel, data: Any, logger: str | None = None) -> None:
        del level, data, logger

    async def elicit(self, message: str, requested_schema: dict[str, Any]) -> types.ElicitResult:
        self.asked.append(message)
        assert "name" in requested_schema["properties"]
        return types.ElicitResult(action="accept", content={"name": self.name})

    async def sample(
        self,
        messages: list[types.SamplingMessage],
        *,
        max_tokens: int,
        system_prompt: str | None = None,
        temperature: float | None = None,
    ) -> types.CreateMessageResult:
        del max_tokens, system_prompt, temperature
        self.asked.append(str(messages[0].content))
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(text=f"summary for {self.name}"), model="m"
        )


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_upstream_requests_reach_the_client_of_the_call_that_caused_them(mode: str) -> None:
    async with our_http_server() as base_url:
        toolset = McpToolset(connection_params=http_params(base_url, "http"), mode=mode, forward_client_requests=True)
        grace, linus = DownstreamClient("Grace"), DownstreamClient("Linus")
        with anyio.fail_after(DEADLINE):
            async with toolset:
                tools = {tool.name: tool for tool in await toolset.get_tools()}
                ask_name, summarize = tools["ask_name"], tools["summarize"]
                assert isinstance(ask_name, McpTool)
                assert isinstance(summarize, McpTool)
                named = await ask_name.run_async(args={}, tool_context=ToolContext(client=grace))
                summary = await summarize.run_async(args={"text": "tabs"}, tool_context=ToolContext(client=linus))
    assert named == {"action": "accept", "name": "Grace"}
    assert summary == {"result": "summary for Linus"}
    assert grace.asked == ["What is your name?"]
    [prompt] = linus.asked
    assert "Summarise: tabs" in prompt
