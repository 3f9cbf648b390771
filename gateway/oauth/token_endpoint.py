"""An OAuth 2.0 token endpoint and the grants asked of it: authorization code, client credentials, refresh, exchange,
and a JWT assertion (the JWT bearer grant).

Each grant is one form POST (RFC 6749 §4.1, §4.4 and §6, RFC 8693, RFC 7523 §2.1) authenticated as the client
(`client_secret_basic`, `client_secret_post`, or `none` for a public client). Errors name the endpoint and the OAuth
error code, never a secret. The client side asks for its upstream credentials here; the server side for the
credentials of its sign-ins.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field
from typing import Final

import httpx2
from pydantic import BaseModel, ConfigDict, ValidationError

from gateway._http_clients import REQUEST_FAILED, http_client
from gateway.errors import CredentialError
from gateway.oauth.client_authentication import ClientAuthMethod, authenticate_client

__all__ = [
    "ACCESS_TOKEN_TYPE",
    "JWT_BEARER_GRANT",
    "TOKEN_EXCHANGE_GRANT",
    "IssuedToken",
    "TokenEndpoint",
    "TokenError",
]

logger = logging.getLogger(__name__)

TOKEN_EXCHANGE_GRANT: Final = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE: Final = "urn:ietf:params:oauth:token-type:access_token"
JWT_BEARER_GRANT: Final = "urn:ietf:params:oauth:grant-type:jwt-bearer"
_TIMEOUT: Final = 30.0
_OK: Final = 200
_EXPIRY_LEEWAY: Final = 30.0
"""Seconds before its stated expiry a token counts as expired (clock skew, the request in flight)."""


class TokenError(CredentialError):
    """The token endpoint refused a grant, answered without a token, or could not be reached.

    `error` is the endpoint's OAuth error code (e.g. `invalid_grant`), empty when it gave none.
    """

    def __init__(self, message: str, error: str = "") -> None:
        super().__init__(message)
        self.error = error


class _TokenResponse(BaseModel):
    model_config = ConfigDict(extra="ignore")

    access_token: str
    token_type: str = "Bearer"
    expires_in: float | None = None
    refresh_token: str | None = None
    scope: str | None = None
    id_token: str | None = None


class _ErrorResponse(BaseModel):
    model_config = ConfigDict(extra="ignore")

    error: str
    error_description: str | None = None


@dataclass(frozen=True, repr=False)
class IssuedToken:
    """An access token as issued: when it expires (wall clock, seconds since the epoch), and how to renew it.

    `expires_in` is the lifetime the endpoint stated; `id_token` the OpenID Connect ID token, if it sent one.
    """

    access_token: str
    expires_at: float | None = None
    refresh_token: str | None = None
    scope: str | None = None
    expires_in: float | None = None
    id_token: str | None = None

    def fresh(self, now: float | None = None) -> bool:
        """Whether the token is still good for a request sent now (with a leeway before its expiry)."""
        if self.expires_at is None:
            return True
        return (now if now is not None else time.time()) < self.expires_at - _EXPIRY_LEEWAY

    def __repr__(self) -> str:
        return f"IssuedToken(expires_at={self.expires_at!r}, refreshable={self.refresh_token is not None})"


@dataclass(frozen=True)
class TokenEndpoint:
    """A token endpoint and the client the gateway is there."""

    url: str
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    auth_method: ClientAuthMethod = "client_secret_basic"

    async def authorization_code(self, code: str, *, redirect_uri: str, code_verifier: str) -> IssuedToken:
        """The token an authorization code stands for (RFC 6749 §4.1.3), sent once with its PKCE verifier."""
        return await self._grant(
            {
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": redirect_uri,
                "code_verifier": code_verifier,
            }
        )

    async def client_credentials(
        self, *, scope: str | None = None, resource: str | None = None, audience: str | None = None
    ) -> IssuedToken:
        """A token for the client itself (RFC 6749 §4.4)."""
        return await self._grant(
            {"grant_type": "client_credentials", "scope": scope, "resource": resource, "audience": audience}
        )

    async def refresh(
        self, refresh_token: str, *, scope: str | None = None, resource: str | None = None
    ) -> IssuedToken:
        """A new access token for a refresh token (RFC 6749 §6); the old refresh token is kept if none is issued."""
        issued = await self._grant(
            {"grant_type": "refresh_token", "refresh_token": refresh_token, "scope": scope, "resource": resource}
        )
        if issued.refresh_token is None:
            issued = dataclasses.replace(issued, refresh_token=refresh_token)
        return issued

    async def exchange(
        self,
        subject_token: str,
        *,
        audience: str | None = None,
        resource: str | None = None,
        scope: str | None = None,
        subject_token_type: str = ACCESS_TOKEN_TYPE,
        requested_token_type: str = ACCESS_TOKEN_TYPE,
    ) -> IssuedToken:
        """A token for another audience, on behalf of the subject token's principal (RFC 8693); by default an
        access token for an access token (the token types say otherwise, e.g. an ID token for an ID-JAG)."""
        return await self._grant(
            {
                "grant_type": TOKEN_EXCHANGE_GRANT,
                "subject_token": subject_token,
                "subject_token_type": subject_token_type,
                "requested_token_type": requested_token_type,
                "audience": audience,
                "resource": resource,
                "scope": scope,
            }
        )

    async def jwt_bearer(self, assertion: str, *, scope: str | None = None, resource: str | None = None) -> IssuedToken:
        """A token for a JWT that vouches for the client's principal (RFC 7523 §2.1: an ID-JAG, a workload's JWT)."""
        return await self._grant(
            {"grant_type": JWT_BEARER_GRANT, "assertion": assertion, "scope": scope, "resource": resource}
        )

    async def _grant(self, parameters: dict[str, str | None]) -> IssuedToken:
        grant = parameters["grant_type"]
        form, headers = authenticate_client(
            {key: value for key, value in parameters.items() if value is not None},
            self.client_id,
            self.client_secret,
            self.auth_method,
        )
        requested_at = time.time()
        try:
            async with http_client(headers=None, connect_timeout=_TIMEOUT, read_timeout=_TIMEOUT) as http:
                response = await http.post(self.url, data=form, headers=headers)
        except REQUEST_FAILED as exc:
            raise TokenError(
                f"The token endpoint {self.url} cannot be reached for a {grant} grant: {type(exc).__name__}: {exc}. "
                "Check the token URL (or issuer) and that the authorization server is running."
            ) from exc
        if response.status_code != _OK:
            error, refusal = _refusal(response)
            raise TokenError(f"The token endpoint {self.url} refused the {grant} grant: {refusal}.", error)
        try:
            body = _TokenResponse.model_validate_json(response.content)
        except ValidationError as exc:
            raise TokenError(
                f"The token endpoint {self.url} answered the {grant} grant without a usable access token "
                f"({exc.error_count()} problems in its JSON)."
            ) from exc
        logger.debug("Got a token from %s (%s grant, expires in %s s).", self.url, grant, body.expires_in)
        expires_at = requested_at + body.expires_in if body.expires_in is not None else None
        return IssuedToken(
            body.access_token, expires_at, body.refresh_token, body.scope, body.expires_in, body.id_token or None
        )


def _refusal(response: httpx2.Response) -> tuple[str, str]:
    """The OAuth error code of a refusal (RFC 6749 §5.2, empty if none), and the refusal as a message says it."""
    try:
        error = _ErrorResponse.model_validate_json(response.content)
    except ValidationError:
        return "", f"HTTP {response.status_code}"
    detail = f" ({error.error_description})" if error.error_description else ""
    return error.error, f"HTTP {response.status_code}, {error.error}{detail}"
