"""A sign-in link is bound to the browser that opens it: the attacks on a link and its callback, over real HTTP.

Most run a server without auth (one principal), where the first browser to open a link is taken as its user's; the
last ones a gateway whose callers are OAuth users, where the link's page logs the browser in first. Each "browser"
here is an HTTP client with a cookie jar of its own (`tests/gateway/server/sign_in/test_sign_in_browsers.py` drives real
Chromium between two users).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx2
import pytest
from mcp import types
from mcp.client.context import ClientRequestContext
from server_harness import DEADLINE, ERAS, Era, connect, http_server
from sign_in_harness import CalendarApi, new_key, signing_in_server, two_users_gateway

from gateway.server import ToolServer
from gateway.tools import FunctionTool
from tests.support.oauth_provider import OAuthProvider

pytestmark = pytest.mark.anyio

Scenario = Callable[[str], Awaitable[None]]
"""What the users' browsers do with the sign-in link the call was sent."""


def browser() -> httpx2.AsyncClient:
    """A browser of its own: its own cookies; redirects are followed only when a step asks."""
    return httpx2.AsyncClient(timeout=DEADLINE)


async def call_with(base_url: str, era: Era, scenario: Scenario) -> types.CallToolResult:
    """Call the tool; `scenario` runs with the sign-in link before the client answers the elicitation."""

    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        del context
        assert isinstance(params, types.ElicitRequestURLParams), params
        await scenario(params.url)
        return types.ElicitResult(action="accept")

    async with connect("http", era, base_url, elicitation_callback=elicit) as client:
        with anyio.fail_after(DEADLINE):
            return await client.call_tool("list_events", {})


async def stored(server: ToolServer) -> dict[str, Any]:
    assert server.credentials is not None
    return dict(await server.credentials.store.load_all("local"))


def text_of(result: types.CallToolResult) -> str:
    return " ".join(block.text for block in result.content if isinstance(block, types.TextContent))


@pytest.mark.parametrize("era", ERAS)
async def test_a_provider_url_carried_to_another_browser_finishes_nothing_and_the_call_says_why(era: Era) -> None:
    async with signing_in_server() as (base_url, api, server):
        pages: list[httpx2.Response] = []

        async def forward(link: str) -> None:
            async with browser() as mine, browser() as theirs:
                onward = (await mine.get(link)).headers["location"]
                assert onward.startswith(api.provider.authorization_endpoint)
                pages.append(await theirs.get(onward, follow_redirects=True))

        result = await call_with(base_url, era, forward)
        assert pages[0].status_code == 403
        assert "did not open this sign-in" in pages[0].text
        assert result.is_error
        assert "nothing was stored" in text_of(result)
        assert await stored(server) == {}
        assert api.provider.token_requests == 0  # the provider's code was never exchanged


async def test_a_link_opened_in_one_browser_is_turned_away_in_another_and_the_first_still_signs_in() -> None:
    async with signing_in_server() as (base_url, _api, server):
        pages: list[httpx2.Response] = []

        async def race(link: str) -> None:
            async with browser() as mine, browser() as theirs:
                onward = (await mine.get(link)).headers["location"]
                pages.append(await theirs.get(link, follow_redirects=True))
                pages.append(await mine.get(onward, follow_redirects=True))

        result = await call_with(base_url, "legacy", race)
        assert pages[0].status_code == 403
        assert "opened in another browser first" in pages[0].text
        assert pages[1].status_code == 200
        assert "You are signed in" in pages[1].text
        assert result.structured_content == {"user": "alice", "scope": "calendar.read", "events": ["standup"]}
        assert set(await stored(server)) == {"calendar"}


async def test_a_secret_entry_post_past_what_the_form_can_hold_is_refused_unread_and_the_server_serves_on() -> None:
    """The entry page is open to anyone who can reach the server: a body it would parse (or spool a multipart file
    of to disk) without a bound is refused with 413 before it is read."""
    async with signing_in_server() as (base_url, _api, _server), browser() as anyone:
        with anyio.fail_after(DEADLINE):
            huge = await anyone.post(
                f"{base_url}/oauth/secret", files={"secret": ("key.txt", b"k" * (2 * 1024 * 1024))}
            )
            long_field = await anyone.post(f"{base_url}/oauth/secret", data={"state": "s", "secret": "k" * 400_000})
            unknown = await anyone.post(f"{base_url}/oauth/secret", data={"state": "no-such-state", "secret": "k"})
    assert huge.status_code == 400
    assert "takes the form it shows" in huge.text
    assert long_field.status_code == 413
    assert unknown.status_code == 400
    assert "not valid" in unknown.text


async def test_the_callback_hit_twice_at_once_exchanges_the_code_once_and_stores_one_credential() -> None:
    async with signing_in_server() as (base_url, api, server):
        statuses: list[int] = []

        async def twice(link: str) -> None:
            async with browser() as mine:
                onward = (await mine.get(link)).headers["location"]
                callback = (await mine.get(onward)).headers["location"]

                async def hit() -> None:
                    statuses.append((await mine.get(callback)).status_code)

                async with anyio.create_task_group() as tg:
                    tg.start_soon(hit)
                    tg.start_soon(hit)

        result = await call_with(base_url, "legacy", twice)
        assert sorted(statuses) == [200, 400]
        assert api.provider.token_requests == 1
        assert not result.is_error, result
        assert set(await stored(server)) == {"calendar"}


async def test_a_link_with_a_tampered_state_shows_an_invalid_link_and_binds_nothing() -> None:
    async with signing_in_server() as (base_url, _api, server):
        pages: list[httpx2.Response] = []

        async def tamper(link: str) -> None:
            async with browser() as theirs, browser() as mine:
                pages.append(await theirs.get(link.replace("state=", "state=x"), follow_redirects=True))
                pages.append(await theirs.get(link.rpartition("=")[0] + "=", follow_redirects=True))
                # The real link is still unbound: its user's browser signs in.
                pages.append(await mine.get(link, follow_redirects=True))

        result = await call_with(base_url, "legacy", tamper)
        assert [page.status_code for page in pages] == [400, 400, 200]
        assert "unknown, already used or expired" in pages[0].text
        assert not result.is_error, result
        assert set(await stored(server)) == {"calendar"}


async def test_a_replayed_link_after_the_sign_in_shows_an_invalid_link() -> None:
    async with signing_in_server() as (base_url, _api, _server):
        links: list[str] = []

        async def sign_in(link: str) -> None:
            links.append(link)
            async with browser() as mine:
                assert (await mine.get(link, follow_redirects=True)).status_code == 200

        assert not (await call_with(base_url, "legacy", sign_in)).is_error
        async with browser() as theirs:
            replay = await theirs.get(links[0], follow_redirects=True)
        assert replay.status_code == 400
        assert "already used or expired" in replay.text


async def test_a_server_with_static_tokens_and_no_login_client_starts_no_sign_in_and_says_what_to_configure() -> None:
    async with OAuthProvider() as provider:
        api = CalendarApi(provider)
        server = ToolServer([FunctionTool(api.list_events)], credential_keys=[new_key()])
        async with http_server(server, auth_tokens={"bob-token": "bob", "alice-token": "alice"}) as base_url:
            asked: list[types.ElicitRequestParams] = []

            async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
                asked.append(params)
                return types.ElicitResult(action="accept")

            async with connect("http", "legacy", base_url, token="bob-token", elicitation_callback=elicit) as client:
                with anyio.fail_after(DEADLINE):
                    result = await client.call_tool("list_events", {})
    assert result.is_error
    assert "cannot verify who opens a sign-in link" in text_of(result)
    assert "signInClient" in text_of(result)
    assert asked == []
    assert api.runs == 1


async def test_a_gateway_login_started_in_one_browser_and_finished_in_another_binds_neither() -> None:
    async with two_users_gateway() as users:
        token = users.provider.mint("bob", audience=users.gateway.resource)
        pages: list[httpx2.Response] = []

        async def carried(link: str) -> None:
            async with browser() as theirs, browser() as mine:
                await mine.get(f"{users.provider.login_url}?user=bob")
                login = (await theirs.get(link)).headers["location"]
                assert login.startswith(users.provider.authorization_endpoint)
                # The gateway's login URL, carried to Bob's own browser: it lacks the login's cookie.
                pages.append(await mine.get(login, follow_redirects=True))
                pages.append(await mine.get(link, follow_redirects=True))

        async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
            del context
            assert isinstance(params, types.ElicitRequestURLParams), params
            await carried(params.url)
            return types.ElicitResult(action="accept")

        base_url = users.gateway.base_url
        async with connect("http", "legacy", base_url, token=token, elicitation_callback=elicit) as client:
            with anyio.fail_after(DEADLINE):
                result = await client.call_tool("list_events", {})
        assert pages[0].status_code == 400
        assert "did not start it" in pages[0].text
        assert pages[1].status_code == 200
        assert "You are signed in" in pages[1].text
        assert result.structured_content == {"user": "bob", "scope": "calendar.read", "events": ["standup"]}
