"""`maxResultBytes`: a large upstream result reaches the client truncated, with a link to the whole, kept a while.

The store (`gateway.hub.kept_results`) is tested directly for its bounds, as an attacker would push them; the hop is
tested with our server mode over HTTP as the upstream (its `echo` returns what it is given) and two downstream
sessions.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from hub_harness import DEADLINE, connect, gateway_http, upstream_http, write_config
from mcp import MCPError, types

from gateway.config import load_config
from gateway.errors import ConfigError
from gateway.hub.kept_results import RESOURCE_NOT_FOUND, KeptResults, cap_result, result_size

LIMIT = 1024
BIG = "0123456789" * 800  # 8000 bytes of text


def text_result(text: str, *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=is_error)


def link_of(result: types.CallToolResult) -> types.ResourceLink:
    [link] = [block for block in result.content if isinstance(block, types.ResourceLink)]
    return link


def whole(read: types.ReadResourceResult) -> dict[str, Any]:
    [contents] = read.contents
    assert isinstance(contents, types.TextResourceContents)
    return json.loads(contents.text)


# --- the store ------------------------------------------------------------------------------------------------


def test_a_result_within_the_limit_is_returned_as_it_is() -> None:
    result = text_result("small")
    assert cap_result(result, LIMIT, KeptResults(), "p/s", "t") is result


def test_a_larger_result_is_cut_to_the_limit_and_its_whole_is_read_back_by_its_session_only() -> None:
    store = KeptResults()
    original = text_result(BIG, is_error=True)
    capped = cap_result(original, LIMIT, store, "local/http:a", "fetch")

    assert result_size(capped) <= LIMIT
    assert capped.is_error is True
    head = capped.content[0]
    assert isinstance(head, types.TextContent)
    assert head.text.startswith("0123456789")
    assert "resources/read" in head.text
    link = link_of(capped)
    assert link.size == result_size(original)
    assert whole(store.read(str(link.uri), "local/http:a")) == original.model_dump(
        by_alias=True, mode="json", exclude_none=True
    )
    with pytest.raises(MCPError) as other:
        store.read(str(link.uri), "local/http:b")
    assert other.value.code == RESOURCE_NOT_FOUND
    with pytest.raises(MCPError):
        store.read("gateway-result://00000000000000000000000000000000", "local/http:a")


def test_ten_thousand_huge_results_keep_the_store_within_its_bound_the_oldest_going_first() -> None:
    store = KeptResults(max_bytes=1_000_000)
    uris = [str(link_of(cap_result(text_result(BIG), LIMIT, store, "p/s", "t")).uri) for _ in range(10_000)]

    assert store.bytes <= 1_000_000
    assert len(store) == 1_000_000 // result_size(text_result(BIG))
    with pytest.raises(MCPError):
        store.read(uris[0], "p/s")
    assert whole(store.read(uris[-1], "p/s"))["content"][0]["text"] == BIG
    assert len(set(uris)) == len(uris)


def test_a_result_larger_than_the_whole_store_is_cut_without_a_link() -> None:
    store = KeptResults(max_bytes=2048)
    capped = cap_result(text_result(BIG), LIMIT, store, "p/s", "t")
    assert [type(block) for block in capped.content] == [types.TextContent]
    assert result_size(capped) <= LIMIT
    assert len(store) == 0


def test_an_expired_result_is_not_found() -> None:
    store = KeptResults(ttl=0.0)
    link = link_of(cap_result(text_result(BIG), LIMIT, store, "p/s", "t"))
    with pytest.raises(MCPError):
        store.read(str(link.uri), "p/s")


# --- config ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["top", "upstream"])
def test_a_max_result_bytes_below_the_minimum_is_a_config_error_naming_the_key(tmp_path: Path, where: str) -> None:
    server: dict[str, Any] = {"command": "x"}
    document: dict[str, Any] = {"mcpServers": {"u": server}}
    (document if where == "top" else server)["maxResultBytes"] = 10
    path = tmp_path / "gateway.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"maxResultBytes: Input should be greater than or equal to 1024"):
        load_config(path)


# --- through the hop ---------------------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("where", ["top", "upstream"])
async def test_a_large_upstream_result_is_cut_and_read_whole_by_the_same_session_only(
    tmp_path: Path, where: str
) -> None:
    async with upstream_http() as url:
        server: dict[str, Any] = {"url": url}
        if where == "upstream":
            server["maxResultBytes"] = LIMIT
        config = write_config(tmp_path, {"up": server})
        if where == "top":
            document = json.loads(config.read_text())
            config.write_text(json.dumps({**document, "maxResultBytes": LIMIT}))
        with anyio.fail_after(DEADLINE):
            async with (
                gateway_http(config) as base_url,
                connect(base_url, "legacy") as client,
                connect(base_url, "legacy") as other,
            ):
                small = await client.call_tool("up_echo", {"text": "hi"})
                capped = await client.call_tool("up_echo", {"text": BIG})
                link = link_of(capped)
                read = await client.read_resource(link.uri)
                with pytest.raises(MCPError) as refused:
                    await other.read_resource(link.uri)
    assert [block.text for block in small.content if isinstance(block, types.TextContent)] == ["hi"]
    assert result_size(capped) <= LIMIT
    # `echo` declares an output schema; the cut result cannot carry its structured content, so it is an error.
    assert capped.is_error is True
    assert whole(read)["content"][0]["text"] == BIG
    assert whole(read)["structuredContent"] == {"result": BIG}
    assert refused.value.code == RESOURCE_NOT_FOUND
