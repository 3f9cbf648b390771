"""OpenID Connect by discovery URL: the endpoints a sign-in needs, read from the provider's discovery document.

A tool may name its provider by the discovery URL alone (`OpenIdConnect(openIdConnectUrl=...)`, the OpenAPI scheme
google-adk also accepts). Before signing the user in (or refreshing a token), the server fetches that document
(OpenID Connect Discovery 1.0 §4) and uses the scheme with the endpoints it names (`OpenIdConnectWithConfig`); the
credential key stays the one the tool's config has.
"""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, ConfigDict, ValidationError

from gateway._http_clients import REQUEST_FAILED, http_client
from gateway.tools import AuthConfig, OpenIdConnect, OpenIdConnectWithConfig

__all__ = ["DiscoveryError", "with_discovered_endpoints"]

_TIMEOUT: Final = 30.0
_OK: Final = 200
_DEFAULT_SCOPES: Final = ("openid",)


class DiscoveryError(Exception):
    """The discovery document cannot be read, or names no authorization and token endpoints."""


class _Discovered(BaseModel):
    model_config = ConfigDict(extra="ignore")

    authorization_endpoint: str
    token_endpoint: str
    userinfo_endpoint: str | None = None
    revocation_endpoint: str | None = None
    token_endpoint_auth_methods_supported: list[str] | None = None
    grant_types_supported: list[str] | None = None


async def with_discovered_endpoints(config: AuthConfig) -> AuthConfig:
    """`config` with its `OpenIdConnect` scheme replaced by the endpoints its discovery document names; any other
    config unchanged.

    Raises:
        DiscoveryError: the document cannot be fetched or read, or lacks the endpoints (the message names the URL).
    """
    scheme = config.auth_scheme
    if not isinstance(scheme, OpenIdConnect):
        return config
    url = scheme.openIdConnectUrl
    async with http_client(headers=None, connect_timeout=_TIMEOUT, read_timeout=_TIMEOUT) as http:
        try:
            response = await http.get(url, headers={"Accept": "application/json"})
        except REQUEST_FAILED as exc:
            raise DiscoveryError(
                f"its OpenID Connect discovery URL {url} cannot be reached ({type(exc).__name__}: {exc})."
            ) from exc
    if response.status_code != _OK:
        raise DiscoveryError(
            f"its OpenID Connect discovery URL {url} answered {response.status_code}, not the discovery document."
        )
    try:
        found = _Discovered.model_validate_json(response.content)
    except ValidationError as exc:
        raise DiscoveryError(
            f"the document at its OpenID Connect discovery URL {url} is not a discovery document with "
            f"authorization_endpoint and token_endpoint ({exc.error_count()} problems)."
        ) from exc
    endpoints = OpenIdConnectWithConfig(**found.model_dump(), scopes=scheme.scopes or list(_DEFAULT_SCOPES))
    return config.model_copy(update={"auth_scheme": endpoints})
