"""An OAuth 2.0 token endpoint and the grants the gateway asks it for: client credentials, refresh, token exchange.

Each grant is one form POST (RFC 6749 §4.4 and §6, RFC 8693) authenticated as the client (`client_secret_basic`,
`client_secret_post`, or `none` for a public client). Errors name the endpoint and the OAuth error code, never a
secret. `discover_token_endpoint` reads an issuer's RFC 8414 metadata (falling back to OpenID Connect discovery).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Final

import httpx2
from pydantic import BaseModel, ConfigDict, ValidationError

from gateway.client.sessions.http import REQUEST_FAILED, http_client
from gateway.errors import CredentialError
from gateway.oauth import ClientAuthMethod, authenticate_client

__all__ = [
    "ACCESS_TOKEN_TYPE",
    "TOKEN_EXCHANGE_GRANT",
    "ClientAuthMethod",
    "IssuedToken",
    "TokenEndpoint",
    "discover_token_endpoint",
]

logger = logging.getLogger(__name__)

TOKEN_EXCHANGE_GRANT: Final = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE: Final = "urn:ietf:params:oauth:token-type:access_token"
_TIMEOUT: Final = 30.0
_OK: Final = 200
_EXPIRY_LEEWAY: Final = 30.0
"""Seconds before its stated expiry a token counts as expired (clock skew, the request in flight)."""


class _TokenResponse(BaseModel):
    model_config = ConfigDict(extra="ignore")

    access_token: str
    token_type: str = "Bearer"
    expires_in: float | None = None
    refresh_token: str | None = None
    scope: str | None = None


class _ErrorResponse(BaseModel):
    model_config = ConfigDict(extra="ignore")

    error: str
    error_description: str | None = None


@dataclass(frozen=True, repr=False)
class IssuedToken:
    """An access token as issued: when it expires (wall clock, seconds since the epoch), and how to renew it."""

    access_token: str
    expires_at: float | None = None
    refresh_token: str | None = None
    scope: str | None = None

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
            issued = IssuedToken(issued.access_token, issued.expires_at, refresh_token, issued.scope)
        return issued

    async def exchange(
        self,
        subject_token: str,
        *,
        audience: str | None = None,
        resource: str | None = None,
        scope: str | None = None,
    ) -> IssuedToken:
        """A token for another audience, on behalf of the subject token's principal (RFC 8693)."""
        return await self._grant(
            {
                "grant_type": TOKEN_EXCHANGE_GRANT,
                "subject_token": subject_token,
                "subject_token_type": ACCESS_TOKEN_TYPE,
                "requested_token_type": ACCESS_TOKEN_TYPE,
                "audience": audience,
                "resource": resource,
                "scope": scope,
            }
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
            raise CredentialError(
                f"The token endpoint {self.url} cannot be reached for a {grant} grant: {type(exc).__name__}: {exc}. "
                "Check the token URL (or issuer) and that the authorization server is running."
            ) from exc
        if response.status_code != _OK:
            raise CredentialError(f"The token endpoint {self.url} refused the {grant} grant: {_refusal(response)}.")
        try:
            body = _TokenResponse.model_validate_json(response.content)
        except ValidationError as exc:
            raise CredentialError(
                f"The token endpoint {self.url} answered the {grant} grant without a usable access token "
                f"({exc.error_count()} problems in its JSON)."
            ) from exc
        logger.debug("Got a token from %s (%s grant, expires in %s s).", self.url, grant, body.expires_in)
        expires_at = requested_at + body.expires_in if body.expires_in is not None else None
        return IssuedToken(body.access_token, expires_at, body.refresh_token, body.scope)


def _refusal(response: httpx2.Response) -> str:
    """The OAuth error of a refusal (RFC 6749 §5.2), or the HTTP status."""
    try:
        error = _ErrorResponse.model_validate_json(response.content)
    except ValidationError:
        return f"HTTP {response.status_code}"
    detail = f" ({error.error_description})" if error.error_description else ""
    return f"HTTP {response.status_code}, {error.error}{detail}"


class _ServerMetadata(BaseModel):
    model_config = ConfigDict(extra="ignore")

    issuer: str
    token_endpoint: str


async def discover_token_endpoint(issuer: str) -> str:
    """The token endpoint an issuer publishes (RFC 8414 metadata, then OpenID Connect discovery).

    Raises:
        CredentialError: neither document is there, or it names another issuer.
    """
    base = issuer.rstrip("/")
    scheme, _, rest = base.partition("://")
    host, slash, path = rest.partition("/")
    suffix = f"{slash}{path}" if path else ""
    candidates = [
        f"{scheme}://{host}/.well-known/oauth-authorization-server{suffix}",
        f"{scheme}://{host}/.well-known/openid-configuration{suffix}",
        f"{base}/.well-known/openid-configuration",
    ]
    async with http_client(headers=None, connect_timeout=_TIMEOUT, read_timeout=_TIMEOUT) as http:
        for url in dict.fromkeys(candidates):
            try:
                response = await http.get(url, headers={"Accept": "application/json"})
            except REQUEST_FAILED as exc:
                raise CredentialError(
                    f"The authorization server {issuer} cannot be reached ({type(exc).__name__}: {exc}). "
                    "Check the issuer URL and that the server is running."
                ) from exc
            if response.status_code != _OK:
                continue
            try:
                metadata = _ServerMetadata.model_validate_json(response.content)
            except ValidationError:
                continue
            if metadata.issuer.rstrip("/") != base:
                raise CredentialError(
                    f"The metadata at {url} names the issuer {metadata.issuer!r}, not {issuer!r}; "
                    "set 'issuer' to the authorization server's exact issuer URL."
                )
            return metadata.token_endpoint
    raise CredentialError(
        f"The authorization server {issuer} publishes no metadata (tried {', '.join(dict.fromkeys(candidates))}); "
        "set 'tokenUrl' instead of 'issuer'."
    )
