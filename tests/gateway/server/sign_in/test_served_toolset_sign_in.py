"""A served `McpToolset` whose upstream needs each user's own OAuth sign-in, through our server, over real HTTP.

The upstream is our server mode protected by the loopback OAuth provider (`tests.support.protected_upstream`); our
server serves an `McpToolset` for it with an authorization-code `auth_scheme`; the downstream client's
URL-elicitation handler follows the URL like a browser.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
import pytest
from docs_toolset import docs_toolset
from mcp import types
from server_harness import DEADLINE, ERAS, Era, connect, http_server
from sign_in_harness import Browser, new_key

from gateway import hub
from gateway.config import load_config
from gateway.hub import gateway_tools
from gateway.server import ToolServer
from tests.support.oauth_provider import OAuthProvider
from tests.support.protected_upstream import ProtectedUpstream, protected_upstream

pytestmark = pytest.mark.anyio

CLIENT_ID, CLIENT_SECRET = "docs-app", "docs-secret"
DOCS_TOOLSET = Path(__file__).resolve().parent.parent / "docs_toolset.py"


Via = Literal["tool_server", "config"]


@asynccontextmanager
async def gateway_to_docs(
    via: Via = "tool_server", tmp_path: Path | None = None, **config: Any
) -> AsyncGenerator[tuple[str, ProtectedUpstream, ToolServer]]:
    """The provider, the protected upstream, and our server serving an `McpToolset` for it (prefix `docs`).

    `via="tool_server"`: `ToolServer([toolset])`. `via="config"`: a gateway.json in `tmp_path` (with `config`'s
    keys) whose `tools` entry is `docs_toolset.py:TOOLS`, served as `adk-mcp-gateway serve CONFIG` serves it: the
    loaded config's tools through the hub.
    """
    async with OAuthProvider() as provider, protected_upstream(provider) as upstream:
        provider.audience = upstream.url
        endpoints = (upstream.url, provider.authorization_endpoint, provider.token_endpoint, CLIENT_ID, CLIENT_SECRET)
        if via == "tool_server":
            server = ToolServer([docs_toolset(*endpoints, connect_timeout=DEADLINE)], credential_keys=[new_key()])
        else:
            assert tmp_path is not None
            path = tmp_path / "gateway.json"
            path.write_text(json.dumps({"name": "docs-gateway", "tools": [f"{DOCS_TOOLSET}:TOOLS"], **config}))
            names = ("DOCS_MCP_URL", "OAUTH_AUTHORIZE_URL", "OAUTH_TOKEN_URL", "OAUTH_CLIENT_ID", "OAUTH_CLIENT_SECRET")
            with pytest.MonkeyPatch.context() as env:
                for name, value in zip(names, endpoints, strict=True):
                    env.setenv(name, value)
                loaded = load_config(path)
                options: dict[str, Any] = {"tool_search": loaded.tool_search.settings()} if loaded.tool_search else {}
                server = hub.gateway_server(
                    gateway_tools(loaded), name=loaded.name, credential_keys=[new_key()], **options
                )
        async with http_server(server) as base_url:
            provider.add_client(
                client_id=CLIENT_ID,
                client_secret=CLIENT_SECRET,
                redirect_uris=[f"{base_url}/oauth/callback"],
                grant_types=("authorization_code", "refresh_token"),
            )
            yield base_url, upstream, server


class ListWatcher(Browser):
    """A browser that also counts `notifications/tools/list_changed`."""

    def __init__(self) -> None:
        super().__init__()
        self.list_changed = 0

    async def on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.list_changed += 1
        await super().on_message(message)


async def sign_in(base_url: str, era: Era) -> None:
    """Sign in through `docs_sign_in` in a session of its own."""
    browser = Browser()
    options = {"elicitation_callback": browser.elicit, "message_handler": browser.on_message}
    async with connect("http", era, base_url, **options) as client:
        with anyio.fail_after(DEADLINE):
            assert not (await client.call_tool("docs_sign_in", {})).is_error


def subjects(upstream: ProtectedUpstream) -> list[str]:
    return [claims["sub"] for claims in map(upstream.provider.decode, upstream.seen) if claims]


@pytest.mark.parametrize("era", ERAS)
async def test_a_user_who_has_not_signed_in_sees_a_sign_in_tool_that_signs_them_in_in_one_call(era: Era) -> None:
    async with gateway_to_docs() as (base_url, upstream, _server):
        browser = ListWatcher()
        options = {"elicitation_callback": browser.elicit, "message_handler": browser.on_message}
        async with connect("http", era, base_url, **options) as client:
            with anyio.fail_after(DEADLINE):
                before = await client.list_tools()
                assert [tool.name for tool in before.tools] == ["docs_sign_in"]
                assert upstream.seen == []  # nothing was tried without the user's credential
                signed_in = await client.call_tool("docs_sign_in", {})
                assert not signed_in.is_error, signed_in
                assert len(browser.asked) == 1
                assert browser.asked[0].url.startswith(f"{base_url}/oauth/sign-in?state=")
                onward = browser.pages[0].history[0].headers["location"]
                assert onward.startswith(upstream.provider.authorization_endpoint + "?")
                assert browser.pages[0].status_code == 200
                assert "docs_whoami" in str(signed_in.structured_content)
                if era == "legacy":
                    assert browser.list_changed >= 1
                after = await client.list_tools()
                assert [tool.name for tool in after.tools] == ["docs_whoami"]
                answer = await client.call_tool("docs_whoami", {})
        assert not answer.is_error, answer
        assert answer.structured_content is not None
        assert answer.structured_content["sub"] == "alice"
        assert set(subjects(upstream)) == {"alice"}
        assert len(browser.asked) == 1


@pytest.mark.parametrize("era", ERAS)
async def test_a_revoked_sign_in_makes_the_next_tool_call_sign_the_user_in_again_and_complete(era: Era) -> None:
    async with gateway_to_docs() as (base_url, upstream, _server):
        await sign_in(base_url, era)
        for token in set(upstream.seen):
            upstream.reject(token)  # revoked: neither it nor its refresh token works any more
        for refresh_token in list(upstream.provider.refresh_tokens):
            upstream.provider.revoke(refresh_token)
        again = Browser()
        options = {"elicitation_callback": again.elicit, "message_handler": again.on_message}
        async with connect("http", era, base_url, **options) as client:
            with anyio.fail_after(DEADLINE):
                answer = await client.call_tool("docs_whoami", {})
        assert not answer.is_error, answer
        assert answer.structured_content is not None
        assert answer.structured_content["sub"] == "alice"
        assert len(again.asked) == 1


async def test_a_signed_in_user_lists_the_upstreams_tools_in_a_new_session_without_signing_in_again() -> None:
    async with gateway_to_docs() as (base_url, upstream, _server):
        await sign_in(base_url, "modern")
        later = Browser()
        options = {"elicitation_callback": later.elicit, "message_handler": later.on_message}
        async with connect("http", "legacy", base_url, **options) as client:
            with anyio.fail_after(DEADLINE):
                listed = await client.list_tools()
                answer = await client.call_tool("docs_whoami", {})
        assert [tool.name for tool in listed.tools] == ["docs_whoami"]
        assert answer.structured_content is not None
        assert answer.structured_content["sub"] == "alice"
        assert later.asked == []
        assert set(subjects(upstream)) == {"alice"}


@pytest.mark.parametrize("era", ERAS)
async def test_a_toolset_from_a_gateway_config_served_through_the_hub_signs_each_user_in_the_same_way(
    era: Era, tmp_path: Path
) -> None:
    async with gateway_to_docs("config", tmp_path) as (base_url, upstream, _server):
        browser = Browser()
        options = {"elicitation_callback": browser.elicit, "message_handler": browser.on_message}
        async with connect("http", era, base_url, **options) as client:
            with anyio.fail_after(DEADLINE):
                before = await client.list_tools()
                signed_in = await client.call_tool("docs_sign_in", {})
                after = await client.list_tools()
                answer = await client.call_tool("docs_whoami", {})
    assert [tool.name for tool in before.tools] == ["docs_sign_in"]
    assert not signed_in.is_error, signed_in
    assert len(browser.asked) == 1
    assert browser.asked[0].url.startswith(f"{base_url}/oauth/sign-in?state=")
    assert browser.pages[0].history[0].headers["location"].startswith(upstream.provider.authorization_endpoint + "?")
    assert [tool.name for tool in after.tools] == ["docs_whoami"]
    assert not answer.is_error, answer
    assert answer.structured_content is not None
    assert answer.structured_content["sub"] == "alice"
    assert set(subjects(upstream)) == {"alice"}


async def test_with_tool_search_on_a_user_who_has_not_signed_in_is_shown_the_sign_in_tool_next_to_search(
    tmp_path: Path,
) -> None:
    async with gateway_to_docs("config", tmp_path, toolSearch="on") as (base_url, upstream, _server):
        browser = Browser()
        options = {"elicitation_callback": browser.elicit, "message_handler": browser.on_message}
        async with connect("http", "legacy", base_url, **options) as client:
            with anyio.fail_after(DEADLINE):
                before = await client.list_tools()
                signed_in = await client.call_tool("call_tool", {"name": "docs_sign_in", "arguments": {}})
                after = await client.list_tools()
                found = await client.call_tool("search_tools", {"query": "my token claims"})
                answer = await client.call_tool("call_tool", {"name": "docs_whoami", "arguments": {}})
    # Not signed in: the gate's one tool is listed beside the search tools (searching would not tell the model
    # that it must sign in first); once signed in, the upstream's tools are found by search, not listed.
    assert [tool.name for tool in before.tools] == ["search_tools", "call_tool", "docs_sign_in"]
    assert not signed_in.is_error, signed_in
    assert [tool.name for tool in after.tools] == ["search_tools", "call_tool"]
    assert found.structured_content is not None
    assert [hit["name"] for hit in found.structured_content["tools"]] == ["docs_whoami"]
    assert answer.structured_content is not None
    assert answer.structured_content["sub"] == "alice"
    assert set(subjects(upstream)) == {"alice"}
