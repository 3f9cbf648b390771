"""`AuthorizationCodeSignIn`: the gateway signs in to an upstream as a user (authorization code + PKCE) on first
contact, wherever the upstream's authorization server leads.

The MCP SDK's `OAuthClientProvider` does the protocol work on the upstream's 401 or 403: protected resource metadata
(RFC 9728, from `WWW-Authenticate` or the well-known paths), authorization server metadata (RFC 8414 or OpenID
Connect, with the issuer checked), the client — a pre-registered one, a Client ID Metadata Document URL where the
server supports it, or dynamic registration (RFC 7591) — the scope (from the challenge, else the metadata), the
resource indicator (RFC 8707, refused when the metadata names another resource), the `iss` of the authorization
response (RFC 9207), the token endpoint's client authentication, refresh, and a scope step-up on
`insufficient_scope`. With `dpop=True` the tokens are bound to a key of the credential (`DPoPAuth`).
What stays with the gateway is the one step a user takes: `authorize` is given the
authorization URL and returns the redirect's parameters (a browser and a redirect listener, or — where no person is
needed, as in tests — a client that follows the redirect itself).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import httpx2
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider, TokenStorage
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl

from gateway.client.credentials.credential import Credential
from gateway.client.credentials.dpop import DPoPAuth
from gateway.errors import CredentialError
from gateway.oauth import ClientAuthMethod
from gateway.tools import ReadonlyContext

__all__ = ["AuthorizationCodeSignIn", "Authorize", "MemoryTokenStorage"]

Authorize = Callable[[str], Awaitable[AuthorizationCodeResult]]
"""The user's step: given the authorization URL, the parameters the authorization server redirected back with."""


class MemoryTokenStorage(TokenStorage):
    """Tokens and the registered client, kept for the life of the process only."""

    def __init__(self, client: OAuthClientInformationFull | None = None) -> None:
        self._tokens: OAuthToken | None = None
        self._client = client

    async def get_tokens(self) -> OAuthToken | None:
        return self._tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self._client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._client = client_info


class _UserStep:
    """Adapts one `authorize` call to the SDK's pair of handlers (send the user there; wait for the redirect)."""

    def __init__(self, authorize: Authorize) -> None:
        self._authorize = authorize
        self._result: AuthorizationCodeResult | None = None

    async def redirect(self, url: str) -> None:
        self._result = await self._authorize(url)

    async def callback(self) -> AuthorizationCodeResult:
        result, self._result = self._result, None
        if result is None:
            raise CredentialError("The sign-in ended without an authorization response.")
        return result


class AuthorizationCodeSignIn(Credential):
    """One user's sign-in to one upstream, shared by every caller of the toolset (see the module docstring).

    Args:
        server_url: the upstream's MCP endpoint (the protected resource).
        authorize: the user's step (see `Authorize`).
        redirect_uri: where the authorization server sends the user back (what `authorize` listens on).
        scope: the scopes to ask for (default: the challenge's, else the protected resource's `scopes_supported`).
        client_id: a client registered beforehand (default: a metadata document URL, else dynamic registration).
        client_secret: its secret, for a confidential client.
        auth_method: how a pre-registered client authenticates at the token endpoint.
        client_metadata_url: an HTTPS URL where the client's metadata document is published (Client ID Metadata
            Documents), used as the client id where the authorization server supports it.
        client_name: the name the client registers with.
        storage: where tokens and a registered client are kept (default: in memory; a `TokenFile` keeps them).
        dpop: ask for tokens bound to a key the credential holds (RFC 9449), and prove possession on each request.
    """

    def __init__(
        self,
        server_url: str,
        authorize: Authorize,
        *,
        redirect_uri: str,
        scope: str | None = None,
        client_id: str | None = None,
        client_secret: str | None = None,
        auth_method: ClientAuthMethod | None = None,
        client_metadata_url: str | None = None,
        client_name: str = "adk-mcp-gateway",
        storage: TokenStorage | None = None,
        dpop: bool = False,
    ) -> None:
        method = auth_method or ("client_secret_basic" if client_secret else "none")
        grants = ["authorization_code", "refresh_token"]
        registered = None
        if client_id is not None:
            registered = OAuthClientInformationFull(
                client_id=client_id,
                client_secret=client_secret,
                redirect_uris=[AnyUrl(redirect_uri)],
                token_endpoint_auth_method=method,
                grant_types=grants,
                scope=scope,
            )
        if storage is None:
            storage = MemoryTokenStorage(registered)
        elif registered is not None:
            raise CredentialError("Give a pre-registered client either to the storage or as client_id=, not both.")
        self._server_url = server_url
        self._step = _UserStep(authorize)
        self._provider = OAuthClientProvider(
            server_url=server_url,
            client_metadata=OAuthClientMetadata(
                client_name=client_name,
                redirect_uris=[AnyUrl(redirect_uri)],
                grant_types=grants,
                response_types=["code"],
                token_endpoint_auth_method=method if client_id is not None else None,
                scope=scope,
            ),
            storage=storage,
            redirect_handler=self._step.redirect,
            callback_handler=self._step.callback,
            client_metadata_url=client_metadata_url,
        )
        self._auth: httpx2.Auth = DPoPAuth(self._provider) if dpop else self._provider

    def auth(self, context: ReadonlyContext | None) -> httpx2.Auth:
        del context
        return self._auth

    def describe(self) -> str:
        return f"a user sign-in (authorization code) to {self._server_url}"
