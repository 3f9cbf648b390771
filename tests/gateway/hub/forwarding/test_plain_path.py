"""The plain path is one question: a guard added to the server's pipeline is respected by the fast lane unasked.

Each case adds something to a gateway's call pipeline and nothing else, then calls upstream tools over a
handshake-era HTTP session: what the new layer applies to reaches it (the general path), and only that.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from hub_harness import DEADLINE, connect, gateway_server, text_of, upstream_http, write_config
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

from gateway.server import ToolServer
from gateway.server.extension import PlainRequest
from tests.support.loopback import serving_tools

pytestmark = pytest.mark.anyio


class Audit:
    """Middleware noting the tools called through it."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "tools/call":
            self.seen.append(str((ctx.params or {}).get("name")))
        return await call_next(ctx)


class UpstreamAudit(Audit):
    """`Audit` for the calls of one upstream's tools, as a guard of the pipeline says."""

    def __init__(self, upstream: str) -> None:
        super().__init__()
        self.upstream = upstream

    def applies_to(self, request: PlainRequest) -> bool:
        # Before the tool is looked up nothing is known of it: the lane asks again with the tool.
        return request.entry is not None and request.entry.upstream == self.upstream


async def _calls(server: ToolServer, names: list[str]) -> list[str]:
    """Call each tool in `names` with `echo`'s arguments over a handshake-era HTTP session of `server`."""
    texts: list[str] = []
    async with serving_tools(server) as url, connect(url, "legacy") as client:
        with anyio.fail_after(DEADLINE):
            # The session's first request other than `initialize` goes the general path; its calls then may not.
            await client.list_tools()
            for name in names:
                texts.append(text_of(await client.call_tool(name, {"text": name})))
    return texts


async def test_middleware_appended_to_the_sdk_server_directly_closes_the_fast_lane(tmp_path: Path) -> None:
    async with upstream_http() as url:
        config = write_config(tmp_path, {"a": {"url": url, "prefix": "a"}})
        server = gateway_server(config)
        audit = Audit()
        server.server.middleware.append(audit)
        assert await _calls(server, ["a_echo", "a_echo"]) == ["a_echo", "a_echo"]
    assert audit.seen == ["a_echo", "a_echo"]
    assert server.relayed_calls == 0


async def test_a_guard_added_to_the_pipeline_takes_the_calls_it_applies_to_and_no_other(tmp_path: Path) -> None:
    async with upstream_http() as url:
        config = write_config(tmp_path, {"a": {"url": url, "prefix": "a"}, "b": {"url": url, "prefix": "b"}})
        server = gateway_server(config)
        audit = UpstreamAudit("b")
        server.pipeline.add(audit)
        assert await _calls(server, ["a_echo", "b_echo", "a_echo"]) == ["a_echo", "b_echo", "a_echo"]
    assert audit.seen == ["b_echo"]
    assert server.relayed_calls == 2


async def test_without_an_added_layer_the_same_calls_take_the_fast_lane(tmp_path: Path) -> None:
    async with upstream_http() as url:
        config = write_config(tmp_path, {"a": {"url": url, "prefix": "a"}})
        server = gateway_server(config)
        assert await _calls(server, ["a_echo", "a_echo"]) == ["a_echo", "a_echo"]
    assert server.relayed_calls == 2
