"""Sessionless (2026-07-28) requests: anonymous clients never share a session; keys are capped bearer secrets.

Without a session key and without an authenticated principal a call has a session of its own, which lasts for the
call and its input rounds; state persists across calls only under a `_meta` session key or a bearer token's
principal, and a session key names a different session for each principal.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import Client, MCPError, types
from server_harness import DEADLINE, connect, http_server

from gateway.server import SESSION_META_KEY

pytestmark = pytest.mark.anyio

ALICE = "tok-alice-0123456789abcdef"
BOB = "tok-bob-0123456789abcdef00"
TOKENS = {ALICE: "alice", BOB: "bob"}


async def _session_count(client: Client, meta: Any = None) -> int:
    with anyio.fail_after(DEADLINE):
        result = await client.call_tool("bump", {}, meta=meta)
    assert not result.is_error, result.content
    return (result.structured_content or {})["session"]


async def test_two_anonymous_modern_clients_never_see_each_others_session_state() -> None:
    async with (
        http_server() as base_url,
        connect("http", "modern", base_url) as first,
        connect("http", "modern", base_url) as second,
    ):
        assert first.protocol_version == second.protocol_version == "2026-07-28"
        counts = [await _session_count(first), await _session_count(second), await _session_count(first)]
    assert counts == [1, 1, 1]


async def test_an_authenticated_principal_keeps_its_session_across_calls_without_a_key() -> None:
    async with (
        http_server(auth_tokens=TOKENS) as base_url,
        connect("http", "modern", base_url, token=ALICE) as alice,
        connect("http", "modern", base_url, token=BOB) as bob,
    ):
        counts = [await _session_count(alice), await _session_count(alice), await _session_count(bob)]
    assert counts == [1, 2, 1]


async def test_one_session_key_names_a_different_session_for_each_principal() -> None:
    meta = {SESSION_META_KEY: "shared-key-0123456789"}
    async with (
        http_server(auth_tokens=TOKENS) as base_url,
        connect("http", "modern", base_url, token=ALICE) as alice,
        connect("http", "modern", base_url, token=BOB) as bob,
    ):
        counts = [await _session_count(alice, meta), await _session_count(bob, meta), await _session_count(alice, meta)]
    assert counts == [1, 1, 2]


@pytest.mark.parametrize("key", ["k" * 257, 12345, ""])
async def test_a_session_key_that_is_too_long_or_not_a_string_is_refused_with_invalid_params(key: Any) -> None:
    async with http_server() as base_url, connect("http", "modern", base_url) as client:
        with anyio.fail_after(DEADLINE), pytest.raises(MCPError) as refused:
            await client.call_tool("bump", {}, meta={SESSION_META_KEY: key})
    assert refused.value.error.code == types.INVALID_PARAMS
    assert SESSION_META_KEY in refused.value.error.message


async def test_a_session_key_at_the_length_limit_is_accepted() -> None:
    meta = {SESSION_META_KEY: "k" * 256}
    async with http_server() as base_url, connect("http", "modern", base_url) as client:
        counts = [await _session_count(client, meta), await _session_count(client, meta)]
    assert counts == [1, 2]
