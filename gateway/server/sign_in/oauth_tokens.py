"""Token endpoint requests of the server's sign-ins, as ADK credentials: the code exchange and the refresh.

The grants themselves are `gateway.oauth.TokenEndpoint`'s; here the answer becomes an ADK `AuthCredential` (type
`oauth2`) holding the tokens and their expiry. The client secret is not kept in it (the tool's own `AuthConfig`
carries it each time it asks).
"""

from __future__ import annotations

from collections.abc import Awaitable

from gateway._http_clients import REQUEST_FAILED
from gateway.oauth import IssuedToken, TokenEndpoint, TokenError
from gateway.tools import AuthCredential, AuthCredentialTypes, OAuth2Auth

__all__ = ["TokenError", "TokenRequest"]


class TokenRequest:
    """Requests to one OAuth2 token endpoint as one client.

    Args:
        token_url: the token endpoint.
        client: the tool's OAuth2 client (id, secret, and how the secret is sent).
    """

    def __init__(self, token_url: str, client: OAuth2Auth) -> None:
        method = "client_secret_post" if client.token_endpoint_auth_method == "client_secret_post" else None
        self._endpoint = TokenEndpoint(
            token_url, client.client_id or "", client.client_secret, method or "client_secret_basic"
        )
        self._client_id = client.client_id

    async def exchange_code(self, code: str, *, redirect_uri: str, code_verifier: str) -> AuthCredential:
        """The credential an authorization code stands for (the code is sent once, with its PKCE verifier)."""
        return await self._credential(
            self._endpoint.authorization_code(code, redirect_uri=redirect_uri, code_verifier=code_verifier)
        )

    async def refresh(self, credential: AuthCredential) -> AuthCredential:
        """A fresh credential for `credential`'s refresh token (a rotated refresh token replaces the old one).

        Raises:
            TokenError: the refresh token was refused (revoked, expired, used) or the endpoint failed.
        """
        refresh_token = credential.oauth2.refresh_token if credential.oauth2 is not None else None
        if not refresh_token:
            raise TokenError("The credential has no refresh token.", "invalid_grant")
        return await self._credential(self._endpoint.refresh(refresh_token))

    async def _credential(self, grant: Awaitable[IssuedToken]) -> AuthCredential:
        try:
            issued = await grant
        except TokenError as exc:
            cause = exc.__cause__
            if isinstance(cause, REQUEST_FAILED):
                # A sign-in page says it shorter: the user cannot fix the token URL, only report it.
                raise TokenError(f"The token endpoint {self._endpoint.url} could not be reached: {cause}") from cause
            raise
        lifetime = int(issued.expires_in) if issued.expires_in is not None else None
        return AuthCredential(
            auth_type=AuthCredentialTypes.OAUTH2,
            oauth2=OAuth2Auth(
                client_id=self._client_id,
                access_token=issued.access_token,
                refresh_token=issued.refresh_token,
                id_token=issued.id_token,
                expires_in=lifetime,
                expires_at=int(issued.expires_at) if issued.expires_at is not None else None,
            ),
        )
