"""OAuth 2.0 pieces that both the client side (outbound credentials) and the server side (sign-ins) use.

How a client authenticates to a token endpoint (`client_authentication`); the token endpoint and its grants
(`token_endpoint`); an issuer's metadata, and an endpoint named by URL or by issuer (`discovery`); PKCE (`pkce`);
the loopback listener a redirect comes back to (`redirect_listener`). Neutral ground: this package imports neither
`gateway.client`, `gateway.hub` nor `gateway.server` (tests/test_layering.py), so the server can use it without
reaching the client.
"""

from gateway.oauth.client_authentication import ClientAuthMethod, authenticate_client
from gateway.oauth.discovery import (
    ConfiguredEndpoint,
    MetadataError,
    MetadataProblem,
    discover_token_endpoint,
    discovery_urls,
    fetch_json,
    issuer_metadata,
    protected_resource,
    provider_configuration,
)
from gateway.oauth.pkce import challenge_parameters, new_code_verifier, pkce_challenge
from gateway.oauth.redirect_listener import redirect_listener
from gateway.oauth.token_endpoint import (
    ACCESS_TOKEN_TYPE,
    JWT_BEARER_GRANT,
    TOKEN_EXCHANGE_GRANT,
    IssuedToken,
    TokenEndpoint,
    TokenError,
)

__all__ = [
    "ACCESS_TOKEN_TYPE",
    "JWT_BEARER_GRANT",
    "TOKEN_EXCHANGE_GRANT",
    "ClientAuthMethod",
    "ConfiguredEndpoint",
    "IssuedToken",
    "MetadataError",
    "MetadataProblem",
    "TokenEndpoint",
    "TokenError",
    "authenticate_client",
    "challenge_parameters",
    "discover_token_endpoint",
    "discovery_urls",
    "fetch_json",
    "issuer_metadata",
    "new_code_verifier",
    "pkce_challenge",
    "protected_resource",
    "provider_configuration",
    "redirect_listener",
]
