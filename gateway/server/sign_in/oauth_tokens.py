"""Token endpoint requests of the server's sign-ins: the authorization code exchange and the refresh (RFC 6749).

The answer becomes an ADK `AuthCredential` (type `oauth2`) holding the tokens and their expiry; the client secret is
not kept in it (the tool's own `AuthConfig` carries it each time it asks).
"""

from __future__ import annotations

import time
from typing import Any, Final

import httpx2

from gateway._request_failures import REQUEST_FAILED
from gateway.errors import GatewayError
from gateway.oauth import authenticate_client
from gateway.tools import AuthCredential, AuthCredentialTypes, OAuth2Auth

__all__ = ["TokenError", "TokenRequest"]

_TIMEOUT: Final = 30.0


class TokenError(GatewayError):
    """The token endpoint refused (`error` is its OAuth error code, e.g. `invalid_grant`) or could not be reached."""

    def __init__(self, message: str, error: str = "") -> None:
        super().__init__(message)
        self.error = error


class TokenRequest:
    """Requests to one OAuth2 token endpoint as one client.

    Args:
        token_url: the token endpoint.
        client: the tool's OAuth2 client (id, secret, and how the secret is sent).
    """

    def __init__(self, token_url: str, client: OAuth2Auth) -> None:
        self._token_url = token_url
        self._client = client

    async def exchange_code(self, code: str, *, redirect_uri: str, code_verifier: str) -> AuthCredential:
        """The credential an authorization code stands for (the code is sent once, with its PKCE verifier)."""
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": code_verifier,
        }
        return self._credential(await self._post(form), previous=None)

    async def refresh(self, credential: AuthCredential) -> AuthCredential:
        """A fresh credential for `credential`'s refresh token (a rotated refresh token replaces the old one).

        Raises:
            TokenError: the refresh token was refused (revoked, expired, used) or the endpoint failed.
        """
        refresh_token = credential.oauth2.refresh_token if credential.oauth2 is not None else None
        if not refresh_token:
            raise TokenError("The credential has no refresh token.", "invalid_grant")
        return self._credential(
            await self._post({"grant_type": "refresh_token", "refresh_token": refresh_token}), previous=credential
        )

    async def _post(self, form: dict[str, str]) -> dict[str, Any]:
        client = self._client
        method = (
            "client_secret_post" if client.token_endpoint_auth_method == "client_secret_post" else "client_secret_basic"
        )
        form, headers = authenticate_client(form, client.client_id or "", client.client_secret, method)
        try:
            async with httpx2.AsyncClient(timeout=_TIMEOUT) as http:
                response = await http.post(self._token_url, data=form, headers=headers)
        except REQUEST_FAILED as exc:
            raise TokenError(f"The token endpoint {self._token_url} could not be reached: {exc}") from exc
        try:
            body: Any = response.json()
        except ValueError:
            body = {}
        if response.status_code != 200 or not isinstance(body, dict) or "access_token" not in body:
            fields: dict[str, Any] = body if isinstance(body, dict) else {}  # pyright: ignore[reportUnknownVariableType]
            error = str(fields.get("error", "")) or f"HTTP {response.status_code}"
            description = str(fields.get("error_description", ""))
            raise TokenError(
                f"The token endpoint {self._token_url} refused: {error}{': ' + description if description else ''}",
                error,
            )
        return body  # pyright: ignore[reportUnknownVariableType]

    def _credential(self, body: dict[str, Any], *, previous: AuthCredential | None) -> AuthCredential:
        expires_in = body.get("expires_in")
        lifetime = int(expires_in) if isinstance(expires_in, int | float) else None
        kept_refresh = previous.oauth2.refresh_token if previous is not None and previous.oauth2 is not None else None
        return AuthCredential(
            auth_type=AuthCredentialTypes.OAUTH2,
            oauth2=OAuth2Auth(
                client_id=self._client.client_id,
                access_token=str(body["access_token"]),
                refresh_token=str(body.get("refresh_token") or kept_refresh or "") or None,
                id_token=str(body["id_token"]) if body.get("id_token") else None,
                expires_in=lifetime,
                expires_at=int(time.time()) + lifetime if lifetime is not None else None,
            ),
        )
