"""The OAuth authorization server the gateway trusts, as the gateway asks it: metadata, JWKS, introspection.

Requests go through the shared `httpx2` builder (`gateway._http_clients`). Metadata is discovered from the issuer
(`gateway.oauth.issuer_metadata`: RFC 8414 path-aware, then OpenID Connect discovery) and must name that issuer.
"""

from __future__ import annotations

import logging
from typing import Any, Final, cast

import anyio
import httpx2

from gateway._http_clients import REQUEST_FAILED, http_client
from gateway.errors import AuthorizationServerError
from gateway.oauth import MetadataError, MetadataProblem, fetch_json, issuer_metadata
from gateway.server.auth.oauth_settings import OAuthSettings

__all__ = ["AuthorizationServer"]

logger = logging.getLogger(__name__)

_TIMEOUT: Final = 10.0


_METADATA_HINTS: Final[dict[MetadataProblem, str]] = {
    "unreachable": "Check auth.issuer and that the authorization server is running.",
    "other issuer": "Check auth.issuer: it must be exactly the `iss` of the tokens.",
    "absent": "Check auth.issuer, or give auth.jwksUri (and auth.introspection.endpoint) directly.",
}


class AuthorizationServer:
    """Metadata, JWKS and introspection of the configured issuer; `aclose()` when done."""

    def __init__(self, settings: OAuthSettings) -> None:
        self._settings = settings
        self._metadata: dict[str, Any] | None = None
        self._lock = anyio.Lock()
        self._http: httpx2.AsyncClient | None = None

    def _client(self) -> httpx2.AsyncClient:
        if self._http is None:
            self._http = http_client(headers=None, connect_timeout=_TIMEOUT, read_timeout=_TIMEOUT)
        return self._http

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    async def _get_json(self, url: str) -> tuple[int, dict[str, Any] | None]:
        try:
            return await fetch_json(self._client(), url)
        except MetadataError as exc:
            raise AuthorizationServerError(str(exc)) from exc

    async def metadata(self) -> dict[str, Any]:
        """The issuer's metadata (fetched once, then kept).

        Raises:
            AuthorizationServerError: no discovery URL answers with metadata naming the issuer.
        """
        async with self._lock:
            if self._metadata is None:
                try:
                    self._metadata = await issuer_metadata(self._client(), self._settings.issuer)
                except MetadataError as exc:
                    raise AuthorizationServerError(f"{exc} {_METADATA_HINTS[exc.problem]}") from exc
            return self._metadata

    async def jwks_uri(self) -> str:
        """The configured JWKS URI, else the metadata's `jwks_uri`."""
        if self._settings.jwks_uri is not None:
            return self._settings.jwks_uri
        uri = (await self.metadata()).get("jwks_uri")
        if not isinstance(uri, str):
            raise AuthorizationServerError(
                f"The metadata of {self._settings.issuer!r} has no jwks_uri; give auth.jwksUri in the config."
            )
        return uri

    async def jwks(self) -> dict[str, Any]:
        """The current JSON Web Key Set.

        Raises:
            AuthorizationServerError: the JWKS cannot be fetched or is not a key set.
        """
        uri = await self.jwks_uri()
        status, document = await self._get_json(uri)
        jwks = document or {}
        if status != 200 or not isinstance(jwks.get("keys"), list):
            raise AuthorizationServerError(f"The JWKS at {uri} answered {status} without a `keys` list.")
        return jwks

    async def introspect(self, token: str) -> dict[str, Any]:
        """The RFC 7662 answer for `token` (`{"active": false}` for an unknown one).

        Raises:
            AuthorizationServerError: introspection is not configured, or the endpoint fails.
        """
        settings = self._settings.introspection
        if settings is None:
            raise AuthorizationServerError("Introspection is not configured (auth.introspection).")
        endpoint = settings.endpoint or (await self.metadata()).get("introspection_endpoint")
        if not isinstance(endpoint, str):
            raise AuthorizationServerError(
                f"The metadata of {self._settings.issuer!r} has no introspection_endpoint; give "
                "auth.introspection.endpoint in the config."
            )
        try:
            response = await self._client().post(
                endpoint,
                data={"token": token, "token_type_hint": "access_token"},
                auth=(settings.client_id, settings.client_secret),
                headers={"Accept": "application/json"},
            )
            answer = response.json() if response.status_code == 200 else None
        except (*REQUEST_FAILED, ValueError) as exc:
            raise AuthorizationServerError(f"Introspection at {endpoint} failed ({type(exc).__name__}).") from exc
        if not isinstance(answer, dict):
            raise AuthorizationServerError(
                f"Introspection at {endpoint} answered {response.status_code}; check auth.introspection.clientId "
                "and clientSecret."
            )
        return cast("dict[str, Any]", answer)
