"""Sign-in links between two users, in real browsers: headless Chromium, one profile per user.

The gateway is an OAuth resource server of the loopback provider (Bob's and Alice's MCP clients hold its tokens),
and a served tool signs its user in at the same provider. Each browser profile is signed in at the provider as one
user (`provider.login_url`), as a real user's browser would be. MCP (2025-11-25, URL-mode elicitation) requires the
server to verify that the user who completes a URL interaction is the one who started it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import pytest
from mcp import types
from mcp.client.context import ClientRequestContext
from server_harness import DEADLINE, ERAS, Era, connect
from sign_in_harness import TwoUsers, two_users_gateway

from tests.support.chromium import CHROMIUM_MISSING, chromium, visit

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(CHROMIUM_MISSING is not None, reason=str(CHROMIUM_MISSING))]


async def call_and_open_link(
    users: TwoUsers, era: Era, caller: str, browser: WebDriver
) -> tuple[types.CallToolResult, str]:
    """`caller` calls the tool; the sign-in link it is sent is opened in `browser`. The call's result and the text
    of the page the browser ends on."""
    token = users.provider.mint(caller, audience=users.gateway.resource)
    links: list[str] = []
    asked = anyio.Event()
    landed: list[str] = []

    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        del context
        assert isinstance(params, types.ElicitRequestURLParams), params
        links.append(params.url)
        asked.set()
        return types.ElicitResult(action="accept")

    async def open_link() -> None:
        await asked.wait()
        landed.append(await visit(browser, links[0]))

    async with (
        connect("http", era, users.gateway.base_url, token=token, elicitation_callback=elicit) as client,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(open_link)
        with anyio.fail_after(DEADLINE):
            result = await client.call_tool("list_events", {})
        if not asked.is_set():
            tg.cancel_scope.cancel()
    assert len(links) == 1, result
    return result, landed[0]


@pytest.mark.parametrize("era", ERAS)
async def test_a_sign_in_link_forwarded_to_another_user_stores_nothing_and_only_its_own_user_can_finish_it(
    era: Era, tmp_path: Path
) -> None:
    async with two_users_gateway() as users:
        with chromium(tmp_path / "alice") as alice, chromium(tmp_path / "bob") as bob:
            assert "alice" in await visit(alice, f"{users.provider.login_url}?user=alice")
            assert "bob" in await visit(bob, f"{users.provider.login_url}?user=bob")

            # Bob sends his link to Alice, who is signed in at the provider and opens it.
            forwarded, alices_page = await call_and_open_link(users, era, "bob", alice)
            assert "You are signed in" not in alices_page
            assert "made for another user" in alices_page, alices_page
            assert forwarded.is_error, forwarded
            assert "opened by another user" in str(forwarded.content), forwarded
            assert users.server.credentials is not None
            assert await users.server.credentials.store.load_all("bob") == {}
            assert await users.server.credentials.store.load_all("alice") == {}

            # Bob opens his next link himself.
            own, bobs_page = await call_and_open_link(users, era, "bob", bob)
            assert "You are signed in" in bobs_page, bobs_page
            assert not own.is_error, own
            assert own.structured_content is not None
            assert own.structured_content["user"] == "bob"
