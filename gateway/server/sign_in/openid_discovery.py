"""OpenID Connect by discovery URL: the endpoints a sign-in needs, read from the provider's discovery document.

A tool may name its provider by the discovery URL alone (`OpenIdConnect(openIdConnectUrl=...)`, the OpenAPI scheme
google-adk also accepts). Before signing the user in (or refreshing a token), the server reads that document
(`gateway.oauth.provider_configuration`, OpenID Connect Discovery 1.0 §4) and uses the scheme with the endpoints it
names (`OpenIdConnectWithConfig`); the credential key stays the one the tool's config has.
"""

from __future__ import annotations

from typing import Final

from pydantic import ValidationError

from gateway.oauth import MetadataError, provider_configuration
from gateway.tools import AuthConfig, OpenIdConnect, OpenIdConnectWithConfig

__all__ = ["DiscoveryError", "with_discovered_endpoints"]

_DEFAULT_SCOPES: Final = ("openid",)
_NOT_ENDPOINTS: Final = frozenset({"type_", "description", "scopes"})
_ENDPOINTS: Final = tuple(name for name in OpenIdConnectWithConfig.model_fields if name not in _NOT_ENDPOINTS)
"""The fields of `OpenIdConnectWithConfig` a discovery document fills (its endpoints and what they support)."""


class DiscoveryError(Exception):
    """The discovery document cannot be read, or names no authorization and token endpoints."""


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
    try:
        document = await provider_configuration(url)
    except MetadataError as exc:
        raise DiscoveryError(f"its OpenID Connect discovery URL: {exc}") from exc
    found = {name: document[name] for name in _ENDPOINTS if name in document}
    try:
        endpoints = OpenIdConnectWithConfig(**found, scopes=scheme.scopes or list(_DEFAULT_SCOPES))
    except ValidationError as exc:
        raise DiscoveryError(
            f"the document at its OpenID Connect discovery URL {url} is not a discovery document with "
            f"authorization_endpoint and token_endpoint ({exc.error_count()} problems)."
        ) from exc
    return config.model_copy(update={"auth_scheme": endpoints})
