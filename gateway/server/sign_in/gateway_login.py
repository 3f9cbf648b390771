"""`GatewayLogin`: the gateway's own login at its authorization server, to learn whose browser opened a sign-in link.

With inbound OAuth a tool call's principal is the subject of its access token, but a browser carries no such token.
So a sign-in link's page (`gateway.server.sign_in.link`) sends the browser through an authorization-code login as
the gateway's sign-in client (`OAuthSettings.sign_in_client`; PKCE S256; `resource` = the gateway's own), exchanges
the code, and checks the access token it gets exactly as it checks a bearer token: the token's principal is the
browser's user. The token serves for that comparison alone and is not kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlencode

from gateway.errors import AuthorizationServerError
from gateway.oauth import challenge_parameters
from gateway.server.auth.oauth_settings import OAuthSettings, SignInClientSettings
from gateway.server.sign_in.oauth_tokens import TokenError, TokenRequest
from gateway.tools import OAuth2Auth

if TYPE_CHECKING:
    from gateway.server.auth.token_verifier import OAuthTokenVerifier

__all__ = ["GatewayLogin", "LoginError"]


class LoginError(Exception):
    """The gateway login did not tell whose browser this is (the message says why, for the page)."""


class GatewayLogin:
    """Logs a browser in at the gateway's authorization server (see the module docstring).

    Args:
        client: the gateway's sign-in client.
        settings: the gateway's OAuth settings (issuer, resource, required scopes).
        verifier: the gateway's bearer-token verifier (and its authorization server's metadata).
    """

    def __init__(self, client: SignInClientSettings, settings: OAuthSettings, verifier: OAuthTokenVerifier) -> None:
        self._client = client
        self._settings = settings
        self._verifier = verifier

    async def _endpoint(self, name: str) -> str:
        try:
            found = (await self._verifier.authorization_server.metadata()).get(name)
        except AuthorizationServerError as exc:
            raise LoginError(f"The gateway's authorization server could not be reached: {exc}") from exc
        if not isinstance(found, str) or not found:
            raise LoginError(f"The metadata of {self._settings.issuer} names no {name}.")
        return found

    async def authorization_url(self, *, redirect_uri: str, state: str, code_verifier: str) -> str:
        """Where to send the browser to log in; it comes back to `redirect_uri` with `code` and `state`.

        Raises:
            LoginError: the authorization server's metadata cannot be had.
        """
        scopes = self._client.scopes or self._settings.required_scopes
        query = {
            "response_type": "code",
            "client_id": self._client.client_id,
            "redirect_uri": redirect_uri,
            **challenge_parameters(code_verifier),
            "state": state,
            "resource": self._settings.resource,
            **({"scope": " ".join(scopes)} if scopes else {}),
        }
        endpoint = await self._endpoint("authorization_endpoint")
        separator = "&" if "?" in endpoint else "?"
        return f"{endpoint}{separator}{urlencode(query)}"

    async def principal(self, code: str, *, redirect_uri: str, code_verifier: str) -> str:
        """The principal the login's `code` stands for, named as a bearer token of the same user would name it.

        Raises:
            LoginError: the code was refused, or the token it gave is not one this gateway accepts.
        """
        client = OAuth2Auth(client_id=self._client.client_id, client_secret=self._client.client_secret)
        try:
            credential = await TokenRequest(await self._endpoint("token_endpoint"), client).exchange_code(
                code, redirect_uri=redirect_uri, code_verifier=code_verifier
            )
        except TokenError as exc:
            raise LoginError(f"The gateway login failed: {exc}") from exc
        token = credential.oauth2.access_token if credential.oauth2 is not None else None
        access = await self._verifier.verify_token(token) if token else None
        if access is None:
            raise LoginError("The gateway login gave a token this gateway does not accept (see its log).")
        return access.subject or access.client_id
