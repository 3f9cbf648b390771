"""Pending sign-ins live in the shared state store: the callback may land on another server than the one that
started the sign-in (another `serve --workers` worker, another replica), and a `state` is still accepted once.

Two `ToolServer`s, each with its own HTTP app, share one SQLite file and one credential key, as two workers do.
The sign-in is started on `first`; its `redirect_uri` (the public callback URL, as behind a balancer) is
`second`'s, so the provider sends the browser back to the server that did not start it.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import types
from mcp.client.context import ClientRequestContext
from server_harness import DEADLINE, ERAS, Era, connect, wait_until_healthy
from sign_in_harness import Browser, CalendarApi, new_key

from gateway.server import ToolServer, serve_async
from gateway.server.sign_in.records import SignInRecords
from gateway.server.sign_in.sign_ins import SignIns
from gateway.state import CredentialKeys, CredentialStore, SqliteStateStore, StateStore
from gateway.state.location import open_state_store
from gateway.tools import FunctionTool
from tests.support.loopback import bound_socket
from tests.support.oauth_provider import OAuthProvider

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def two_servers(state: Path) -> AsyncGenerator[tuple[str, str, CalendarApi]]:
    """The provider, and two servers of one tool on one state file; every sign-in returns to the second."""
    key = new_key()
    async with OAuthProvider() as provider:
        api = CalendarApi(provider)
        with bound_socket() as first_sock, bound_socket() as second_sock:
            first_url = f"http://127.0.0.1:{first_sock.getsockname()[1]}"
            second_url = f"http://127.0.0.1:{second_sock.getsockname()[1]}"
            callback = f"{second_url}/oauth/callback"
            client = provider.add_client(redirect_uris=[callback], grant_types=("authorization_code", "refresh_token"))
            api.client_id, api.client_secret = client.client_id, client.client_secret or ""
            async with anyio.create_task_group() as tg:
                for sock in (first_sock, second_sock):
                    server = ToolServer(
                        [FunctionTool(api.list_events)],
                        state_store=SqliteStateStore(state),
                        credential_keys=[key],
                        callback_url=callback,
                    )
                    tg.start_soon(lambda s=server, k=sock: serve_async(s, transport="http", sock=k, auth_tokens={}))
                await wait_until_healthy(first_url)
                await wait_until_healthy(second_url)
                try:
                    yield first_url, second_url, api
                finally:
                    tg.cancel_scope.cancel()


class Recorder(Browser):
    """A browser that keeps the URL the provider sent it back to (the callback, with `code` and `state`)."""

    def __init__(self) -> None:
        super().__init__()
        self.callbacks: list[str] = []

    async def elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        del context
        assert isinstance(params, types.ElicitRequestURLParams)
        self.asked.append(params)
        # One browser throughout: the link binds it, and only it may come back to the callback.
        async with httpx2.AsyncClient(timeout=DEADLINE) as http:
            onward = (await http.get(params.url)).headers["location"]
            self.callbacks.append((await http.get(onward)).headers["location"])
            self.pages.append(await http.get(params.url, follow_redirects=True))
        return types.ElicitResult(action="accept")


@pytest.mark.parametrize("era", ERAS)
async def test_a_callback_landing_on_the_other_server_completes_the_sign_in_within_the_one_call(
    era: Era, tmp_path: Path
) -> None:
    async with two_servers(tmp_path / "state.db") as (first_url, second_url, _api):
        browser = Recorder()
        options = {"elicitation_callback": browser.elicit, "message_handler": browser.on_message}
        async with connect("http", era, first_url, **options) as client:
            with anyio.fail_after(DEADLINE):
                result = await client.call_tool("list_events", {})
        assert not result.is_error, result
        assert result.structured_content == {"user": "alice", "scope": "calendar.read", "events": ["standup"]}
        assert browser.callbacks[0].startswith(second_url + "/oauth/callback?")
        assert browser.pages[0].status_code == 200, browser.pages[0].text
        assert "signed in" in browser.pages[0].text


async def test_a_replayed_or_forged_state_is_refused_on_every_server(tmp_path: Path) -> None:
    async with two_servers(tmp_path / "state.db") as (first_url, second_url, api):
        browser = Recorder()
        options = {"elicitation_callback": browser.elicit, "message_handler": browser.on_message}
        async with connect("http", "modern", first_url, **options) as client:
            with anyio.fail_after(DEADLINE):
                assert not (await client.call_tool("list_events", {})).is_error
        exchanges = api.provider.token_requests
        used = browser.callbacks[0]
        async with httpx2.AsyncClient(timeout=DEADLINE) as http:
            for base in (first_url, second_url):
                replay = await http.get(used.replace(second_url, base))
                assert replay.status_code == 400, (base, replay.text)
                assert "already used or expired" in replay.text
                forged = await http.get(used.replace(second_url, base).replace("state=", "state=forged"))
                assert forged.status_code == 400
        assert api.provider.token_requests == exchanges


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
async def test_a_state_is_taken_once_across_processes_and_never_once_expired_or_forged(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    location = str(tmp_path / "state.db") if kind == "sqlite" else request.getfixturevalue("redis_url")
    started, other = open_state_store(location), open_state_store(location)
    keys = CredentialKeys([new_key()])
    app = f"app-{secrets.token_hex(4)}"  # a fresh app on the shared Redis
    try:

        def sign_ins(store: StateStore, lifetime: float) -> SignIns:
            records = SignInRecords(store, keys, app_name=app, lifetime=lifetime)
            return SignIns(CredentialStore(store, keys, app_name=app), lifetime=lifetime, records=lambda _: records)

        async with OAuthProvider() as provider:
            api = CalendarApi(provider)
            api.client_id = "calendar-app"
            fresh, expired = sign_ins(started, 600), sign_ins(started, -1)
            who = {"principal": "ada", "session_owner": "s", "redirect_uri": "http://127.0.0.1:9/oauth/callback"}
            who["link"] = "http://127.0.0.1:9/oauth/sign-in"
            dead = await expired.begin(api.config(), tool_name="b", **who)
            live = await fresh.begin(api.config(), tool_name="a", **who)
            elsewhere = sign_ins(other, 600)
            assert await elsewhere.take(dead.state) is None
            assert await elsewhere.take("forged-" + live.state) is None
            taken = await elsewhere.take(live.state)
            assert taken is not None
            assert taken.code_verifier == live.code_verifier
            assert await elsewhere.take(live.state) is None
            assert await fresh.take(live.state) is None  # once, whichever process is asked
    finally:
        await started.aclose()
        await other.aclose()
