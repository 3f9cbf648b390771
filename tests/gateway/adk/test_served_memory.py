"""Long-term memory served over MCP: google-adk's `load_memory` and tools calling `tool_context.search_memory`.

Each way is a real `serve` child (stdio, or streamable HTTP) in either protocol era. What one call remembers, a later
call of the same user finds, also after a restart (the default memory lives in the state's SQLite file); another
user never does.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters, types
from mcp.client.streamable_http import streamable_http_client

from tests.support.loopback import free_port, wait_for_port

pytestmark = pytest.mark.anyio

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
TOOLS = str(HERE / "memory_tools.py")
DEADLINE = 60.0
ALICE = "tok-alice-0123456789abcdef"
BOB = "tok-bob-0123456789abcdef00"
WAYS = ("stdio-legacy", "stdio-modern", "http-legacy", "http-modern")


@asynccontextmanager
async def _serving(way: str, serve_args: list[str], token: str | None = None) -> AsyncGenerator[Client]:
    """A client of a `serve` child started with `serve_args`, over `way` (`<transport>-<era>`)."""
    transport, era = way.split("-")
    mode = "legacy" if era == "legacy" else "auto"
    command = [sys.executable, "-m", "gateway.cli", "serve", *serve_args]
    if transport == "stdio":
        params = StdioServerParameters(command=command[0], args=command[1:], cwd=str(ROOT))
        async with Client(params, mode=mode) as client:
            yield client
        return
    port = free_port()
    tokens = ["--auth-token", f"alice={ALICE}", "--auth-token", f"bob={BOB}"]
    http_command = [*command, "--transport", "http", "--port", str(port), *tokens]
    async with await anyio.open_process(http_command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=None) as process:
        try:
            await wait_for_port(port, DEADLINE, process)
            headers = {"Authorization": f"Bearer {token or ALICE}"}
            async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http:
                stream = streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)
                async with Client(stream, mode=mode) as client:
                    yield client
        finally:
            process.kill()


async def _call(client: Client, name: str, args: dict[str, Any]) -> dict[str, Any]:
    with anyio.fail_after(DEADLINE):
        result = await client.call_tool(name, args)
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return result.structured_content
    text = result.content[0]
    assert isinstance(text, types.TextContent)
    return json.loads(text.text)


def _texts(load_memory_result: dict[str, Any]) -> list[str]:
    return [part["text"] for memory in load_memory_result["memories"] for part in memory["content"]["parts"]]


@pytest.mark.parametrize("way", WAYS)
async def test_served_load_memory_and_a_tool_searching_memory_find_what_a_served_tool_remembered_across_a_restart(
    way: str, tmp_path: Path
) -> None:
    serve = ["--tools", f"{TOOLS}:adk_tools", "--state", str(tmp_path / "state.db")]
    async with _serving(way, serve) as client:
        assert await _call(client, "remember", {"fact": "My favourite colour is teal."}) == {
            "remembered": "My favourite colour is teal."
        }
        await _call(client, "remember", {"fact": "I live in Lisbon."})
    async with _serving(way, serve) as client:
        loaded = await _call(client, "load_memory", {"query": "what is my favourite colour"})
        recalled = await _call(client, "recall", {"query": "Lisbon"})
    assert _texts(loaded)[0] == "My favourite colour is teal."
    assert loaded["memories"][0]["author"] == "user"
    assert recalled == {"results": ["I live in Lisbon."]}


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_one_users_memories_are_never_found_by_another_user(era: str, tmp_path: Path) -> None:
    serve = ["--tools", f"{TOOLS}:adk_tools", "--state", str(tmp_path / "state.db")]
    async with _serving(f"http-{era}", serve, ALICE) as alice:
        await _call(alice, "remember", {"fact": "My favourite colour is teal."})
        own = await _call(alice, "load_memory", {"query": "favourite colour"})
    async with _serving(f"http-{era}", serve, BOB) as bob:
        other = await _call(bob, "load_memory", {"query": "favourite colour"})
    assert _texts(own) == ["My favourite colour is teal."]
    assert other == {"memories": []}


@pytest.mark.parametrize("way", ["stdio-legacy", "http-modern"])
async def test_our_own_tools_remember_and_search_memory_when_served(way: str, tmp_path: Path) -> None:
    serve = ["--tools", f"{TOOLS}:our_tools", "--state", str(tmp_path / "state.db")]
    async with _serving(way, serve) as client:
        await _call(client, "remember", {"fact": "The dog is called Rex."})
        await _call(client, "remember", {"fact": "The cat is called Tom."})
        recalled = await _call(client, "recall", {"query": "dog name"})
    assert recalled["results"][0] == "The dog is called Rex."


@pytest.mark.parametrize("way", ["stdio-modern", "http-legacy"])
async def test_a_memory_service_named_in_the_config_serves_load_memory(way: str, tmp_path: Path) -> None:
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"tools": [f"{TOOLS}:adk_tools"], "memory": f"{TOOLS}:adk_memory"}))
    async with _serving(way, [str(config), "--state", str(tmp_path / "state.db")]) as client:
        await _call(client, "remember", {"fact": "My favourite colour is teal."})
        loaded = await _call(client, "load_memory", {"query": "favourite colour"})
    assert _texts(loaded) == ["My favourite colour is teal."]
    # Kept by google-adk's InMemoryMemoryService in the child, not in the state file.
    async with _serving(way, [str(config), "--state", str(tmp_path / "state.db")]) as client:
        assert await _call(client, "load_memory", {"query": "favourite colour"}) == {"memories": []}


async def test_beside_a_redis_state_store_memory_needs_the_config_key_and_then_works(
    redis_url: str, tmp_path: Path
) -> None:
    tools = f"{TOOLS}:adk_tools"
    async with _serving("stdio-legacy", ["--tools", tools, "--state", redis_url]) as client:
        with anyio.fail_after(DEADLINE):
            refused = await client.call_tool("load_memory", {"query": "favourite colour"})
    assert refused.is_error
    text = refused.content[0]
    assert isinstance(text, types.TextContent)
    assert "Memory service is not available" in text.text
    assert '"memory" key' in text.text
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"tools": [tools], "memory": "memory.db", "state": redis_url}))
    async with _serving("stdio-modern", [str(config)]) as client:
        await _call(client, "remember", {"fact": "My favourite colour is teal."})
        loaded = await _call(client, "load_memory", {"query": "favourite colour"})
    assert _texts(loaded) == ["My favourite colour is teal."]
    assert (tmp_path / "memory.db").is_file()
