"""What the HTTP front needs to act as an OAuth 2.1 resource server (the config's `auth` section, or `serve` flags)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final
from urllib.parse import urlparse

from gateway.errors import ConfigError

__all__ = ["DEFAULT_ALGORITHMS", "IntrospectionSettings", "OAuthSettings", "SignInClientSettings"]

DEFAULT_ALGORITHMS: Final = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
"""Asymmetric signatures only: the keys come from a public JWKS, so a shared-secret (HS*) algorithm would let
anyone holding the public key forge tokens, and `none` is no signature at all."""


@dataclass(frozen=True)
class IntrospectionSettings:
    """RFC 7662 token introspection, for opaque (non-JWT) access tokens.

    Attributes:
        client_id: the gateway's client id at the authorization server.
        client_secret: its secret (sent with HTTP Basic authentication; never logged).
        endpoint: the introspection endpoint; default: `introspection_endpoint` from the issuer's metadata.
        cache_seconds: how long an active answer is reused (never past the token's `exp`).
    """

    client_id: str
    client_secret: str = field(repr=False)
    endpoint: str | None = None
    cache_seconds: float = 60.0


@dataclass(frozen=True)
class SignInClientSettings:
    """The gateway's own OAuth client at the authorization server, to learn whose browser opened a sign-in link.

    Register it with the redirect URI `<gateway base URL>/oauth/login` and the authorization-code grant.

    Attributes:
        client_id: its client id.
        client_secret: its secret (None: a public client).
        scopes: scopes its login asks for (default: `required_scopes`).
    """

    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    scopes: tuple[str, ...] = ()


@dataclass(frozen=True)
class OAuthSettings:
    """The gateway as an OAuth 2.1 resource server (MCP authorization spec; RFC 9728, RFC 8707, RFC 9068).

    Attributes:
        issuer: the authorization server's issuer identifier; tokens must carry it as `iss`.
        resource: this gateway's canonical URL (RFC 8707 resource indicator, e.g. `https://gw.example.com/mcp`),
            published in the protected resource metadata.
        audiences: accepted `aud` values; default: `resource` alone. A JWT and an introspection answer alike
            must name one (an answer without `aud` is refused).
        jwks_uri: where the signing keys are; default: `jwks_uri` from the issuer's metadata (RFC 8414 / OIDC).
        required_scopes: scopes every request's token must carry (else 403 `insufficient_scope`).
        scopes_supported: scopes advertised in the metadata (default: `required_scopes`).
        algorithms: accepted JWS algorithms (asymmetric only).
        leeway: seconds of clock skew allowed on `exp`, `nbf` and `iat`.
        principal_claims: token claims kept with the principal (e.g. `groups`) for policies.
        introspection: how to check opaque tokens; None accepts only JWTs.
        jwks_refetch_interval: least seconds between two JWKS fetches after the first load, whatever asks (an
            unknown `kid`, the age of the set, a failed fetch to retry).
        jwks_max_age: seconds after which the JWKS is fetched again in the background (retired keys drop out);
            meanwhile, and while that fetch fails, tokens are checked against the cached keys.
        sign_in_client: the gateway's login client, which user sign-ins (URL-mode elicitation) need: the link's page
            logs the browser in to learn its user, and only the principal who asked may finish the sign-in. None:
            tools cannot sign users in (a call that needs it gets an error naming this setting).
    """

    issuer: str
    resource: str
    audiences: tuple[str, ...] = ()
    jwks_uri: str | None = None
    required_scopes: tuple[str, ...] = ()
    scopes_supported: tuple[str, ...] = ()
    algorithms: tuple[str, ...] = DEFAULT_ALGORITHMS
    leeway: float = 30.0
    principal_claims: tuple[str, ...] = ("groups",)
    introspection: IntrospectionSettings | None = None
    jwks_refetch_interval: float = 30.0
    jwks_max_age: float = 600.0
    sign_in_client: SignInClientSettings | None = None

    def __post_init__(self) -> None:
        for name, url in (("issuer", self.issuer), ("resource", self.resource), ("jwksUri", self.jwks_uri)):
            if url is not None and urlparse(url).scheme not in ("http", "https"):
                raise ConfigError(f"auth.{name} must be an http(s) URL, got {url!r}.")
        if urlparse(self.resource).fragment:
            raise ConfigError(f"auth.resource must not have a fragment (RFC 8707), got {self.resource!r}.")
        unsafe = sorted(a for a in self.algorithms if a.lower() == "none" or a.upper().startswith("HS"))
        if unsafe:
            raise ConfigError(
                f"auth.algorithms lists {', '.join(unsafe)}: keys come from a public JWKS, so only asymmetric "
                f"algorithms are safe. Remove them (default: {', '.join(DEFAULT_ALGORITHMS)})."
            )
        if not self.algorithms:
            raise ConfigError("auth.algorithms is empty; leave it out to accept the usual asymmetric algorithms.")

    @property
    def accepted_audiences(self) -> tuple[str, ...]:
        """The `aud` values a token may carry (any one suffices)."""
        return self.audiences or (self.resource,)

    @property
    def advertised_scopes(self) -> tuple[str, ...]:
        """`scopes_supported` of the protected resource metadata."""
        return self.scopes_supported or self.required_scopes

    @property
    def resource_metadata_url(self) -> str:
        """Where the RFC 9728 metadata is: `/.well-known/oauth-protected-resource` plus the resource's path."""
        parsed = urlparse(self.resource)
        path = parsed.path if parsed.path != "/" else ""
        return f"{parsed.scheme}://{parsed.netloc}/.well-known/oauth-protected-resource{path}"
