"""The one interactive step of a user login: authorization code + PKCE, with dynamic client registration.

`log_in` runs a redirect listener on `127.0.0.1` (`/callback`), connects to the upstream through the MCP SDK's
`OAuthClientProvider` — which discovers the authorization server from the upstream's 401 (RFC 9728, RFC 8414),
registers a client when none is stored (RFC 7591), and sends the user to the authorization URL — hands that URL to
`open_url` (the CLI prints it and opens a browser), waits for the redirect, and stores the tokens in the
`TokenFile`, with the token endpoint for later renewals. The connection that follows proves the token works.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import cast

import anyio
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.shared.auth import OAuthClientMetadata
from pydantic import AnyUrl
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from gateway.client.connection import ConnectionParams, SseConnectionParams, StreamableHTTPConnectionParams
from gateway.client.credentials.token_file import TokenFile
from gateway.client.sessions.upstream_session import ClientCallbacks, open_upstream
from gateway.errors import CredentialError, UpstreamUnavailableError
from gateway.oauth import redirect_listener

__all__ = ["LoginResult", "log_in"]

logger = logging.getLogger(__name__)

_DONE_PAGE = "<!doctype html><title>Signed in</title><p>adk-mcp-gateway is signed in. You can close this window.</p>"
_FAILED_PAGE = "<!doctype html><title>Sign-in failed</title><p>The sign-in failed: {error}. See the terminal.</p>"


@dataclass(frozen=True)
class LoginResult:
    """What a login achieved: where the tokens are, and how many tools the upstream listed with them."""

    path: str
    tools: int


class _Redirect:
    """The redirect listener's catch: the first `/callback` request's parameters."""

    def __init__(self) -> None:
        self.arrived = anyio.Event()
        self.result: AuthorizationCodeResult | None = None
        self.error: str | None = None

    async def callback(self, request: Request) -> HTMLResponse:
        if self.arrived.is_set():
            return HTMLResponse(_FAILED_PAGE.format(error="this sign-in was already completed"), status_code=409)
        params = request.query_params
        code = params.get("code")
        if code is None:
            self.error = params.get("error_description") or params.get("error") or "no authorization code"
        else:
            self.result = AuthorizationCodeResult(code=code, state=params.get("state"), iss=params.get("iss"))
        self.arrived.set()
        if self.error is not None:
            return HTMLResponse(_FAILED_PAGE.format(error="the authorization server refused"), status_code=400)
        return HTMLResponse(_DONE_PAGE)


@asynccontextmanager
async def _listen_for_redirect(port: int) -> AsyncGenerator[tuple[str, _Redirect]]:
    """A loopback HTTP listener for the authorization redirect; yields its redirect URI and its catch."""
    catch = _Redirect()
    app = Starlette(routes=[Route("/callback", catch.callback)])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        sock.close()
        raise CredentialError(
            f"Cannot listen for the sign-in redirect on 127.0.0.1:{port} ({exc.strerror or exc}); "
            "choose another port (--port) or let the system pick one (--port 0)."
        ) from exc
    sock.listen(16)
    async with redirect_listener(app, sock):
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/callback", catch


async def log_in(
    params: ConnectionParams,
    file: TokenFile,
    *,
    open_url: Callable[[str], Awaitable[None]],
    scope: str | None = None,
    client_id: str | None = None,
    client_secret: str | None = None,
    port: int = 0,
    deadline: float = 300.0,
) -> LoginResult:
    """Sign the user in to an HTTP upstream and store the tokens (see the module docstring).

    Args:
        params: how to reach the upstream (its `auth` is replaced for the login).
        file: where the login is stored (any earlier login there is replaced).
        open_url: shows the authorization URL to the user (prints it, opens a browser).
        scope: the scopes to ask for (default: what the upstream's metadata says).
        client_id: a client registered beforehand (default: register one dynamically).
        client_secret: its secret, for a confidential client.
        port: the redirect listener's port (0: any free port; a pre-registered client needs its fixed one).
        deadline: seconds the user has to complete the sign-in.

    Raises:
        CredentialError: the sign-in failed, was refused, or was not completed in time.
        UpstreamUnavailableError: the upstream cannot be reached, or refused the token it got.
    """
    if not isinstance(params, StreamableHTTPConnectionParams | SseConnectionParams):
        raise CredentialError(f"{params.describe()} is a stdio server: there is nothing to log in to.")
    async with _listen_for_redirect(port) as (redirect_uri, catch):

        async def wait_for_redirect() -> AuthorizationCodeResult:
            with anyio.move_on_after(deadline):
                await catch.arrived.wait()
            if not catch.arrived.is_set():
                raise CredentialError(f"The sign-in was not completed within {deadline:g} s; run the login again.")
            if catch.result is None:
                raise CredentialError(f"The authorization server refused the sign-in: {catch.error}.")
            return catch.result

        auth_method = "client_secret_post" if client_secret else "none"
        fresh = {"access_token": None, "refresh_token": None, "expires_at": None, "scope": None}
        client = None
        if client_id is not None:
            client = {
                "client_id": client_id,
                "client_secret": client_secret,
                "redirect_uris": [redirect_uri],
                "token_endpoint_auth_method": auth_method,
                "grant_types": ["authorization_code", "refresh_token"],
            }
        await file.update(server_url=file.server_url, client=client, **fresh)
        provider = OAuthClientProvider(
            server_url=params.url,
            client_metadata=OAuthClientMetadata(
                client_name="adk-mcp-gateway",
                redirect_uris=[AnyUrl(redirect_uri)],
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
                token_endpoint_auth_method=auth_method,
                scope=scope,
            ),
            storage=file,
            redirect_handler=open_url,
            callback_handler=wait_for_redirect,
        )
        connection = params.model_copy(update={"auth": provider, "connect_timeout": deadline + params.connect_timeout})
        tools = 0
        async with anyio.create_task_group() as tg:
            try:
                session = await open_upstream(tg, connection, ClientCallbacks(), mode="legacy")
            except UpstreamUnavailableError as exc:
                # A sign-in that failed says why better than the connection error wrapped around it.
                cause = _credential_error(exc)
                if cause is not None:
                    raise cause from None
                raise
            try:
                tools = len((await session.client.list_tools()).tools)
            finally:
                await session.aclose()
        metadata = provider.context.oauth_metadata
        if metadata is None:
            raise CredentialError(f"{params.describe()} let the client in without asking for a sign-in.")
        record = await file.update(token_endpoint=str(metadata.token_endpoint), issuer=str(metadata.issuer))
        if record.access_token is None:
            raise CredentialError(f"The sign-in to {params.describe()} ended without a token.")
        logger.info("Signed in to %s; the tokens are in %s.", params.describe(), file.path)
        return LoginResult(path=str(file.path), tools=tools)


def _credential_error(exc: BaseException | None) -> CredentialError | None:
    """The `CredentialError` among an exception's causes (through exception groups), if any."""
    while exc is not None:
        if isinstance(exc, CredentialError):
            return exc
        if isinstance(exc, BaseExceptionGroup):
            group = cast("BaseExceptionGroup[BaseException]", exc)
            found = (_credential_error(inner) for inner in group.exceptions)
            return next((error for error in found if error is not None), None)
        exc = exc.__cause__ or exc.__context__
    return None
