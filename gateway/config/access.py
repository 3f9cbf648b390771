"""The config's `auth` and `policies` sections: who may reach the gateway, and which tools each principal may use.

"auth": {
  "issuer": "https://login.example.com/realms/main",
  "resource": "https://gateway.example.com/mcp",
  "requiredScopes": ["mcp:tools"],
  "principalClaims": ["groups"]
},
"policies": [
  {"claims": {"groups": ["admins"]}, "allowTools": ["*"]},
  {"principals": ["*"], "allowTools": ["time_*"], "rateLimit": {"calls": 30, "perSeconds": 60}}
]
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, NonNegativeFloat, PositiveFloat, PositiveInt
from pydantic.alias_generators import to_camel

from gateway.server.auth.oauth_settings import (
    DEFAULT_ALGORITHMS,
    IntrospectionSettings,
    OAuthSettings,
    SignInClientSettings,
)
from gateway.server.policy.rules import Kind, Policy, PolicyRule, RateLimit

__all__ = ["AuthConfig", "IntrospectionConfig", "PolicyConfig", "RateLimitConfig", "SignInClientConfig", "policy_of"]

_MODEL_CONFIG = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True)


class IntrospectionConfig(BaseModel):
    """RFC 7662 introspection of opaque access tokens (the gateway authenticates as a client of the issuer)."""

    model_config = _MODEL_CONFIG

    client_id: str
    client_secret: str = Field(repr=False)
    endpoint: str | None = None
    """Default: `introspection_endpoint` from the issuer's metadata."""
    cache_seconds: NonNegativeFloat = 60.0


class SignInClientConfig(BaseModel):
    """The gateway's own login client at the issuer (redirect URI `<gateway base URL>/oauth/login`): how a user
    sign-in's link page learns whose browser opened it."""

    model_config = _MODEL_CONFIG

    client_id: str
    client_secret: str | None = Field(default=None, repr=False)
    scopes: list[str] = Field(default_factory=list[str])


class AuthConfig(BaseModel):
    """The gateway as an OAuth 2.1 resource server (see `gateway.server.auth.oauth_settings.OAuthSettings`)."""

    model_config = _MODEL_CONFIG

    issuer: str
    resource: str | None = None
    """This gateway's public URL, e.g. `https://gateway.example.com/mcp`; default: `http://HOST:PORT/mcp` of
    `serve` (right only when clients reach the gateway directly)."""
    audience: list[str] = Field(default_factory=list[str])
    """Accepted `aud` values instead of `resource` (some issuers put an API name there); default: `resource`.
    A JWT and an introspection answer alike must name one in `aud`."""
    jwks_uri: str | None = None
    required_scopes: list[str] = Field(default_factory=list[str])
    scopes_supported: list[str] = Field(default_factory=list[str])
    algorithms: list[str] = Field(default_factory=lambda: list(DEFAULT_ALGORITHMS))
    leeway: NonNegativeFloat = 30.0
    principal_claims: list[str] = Field(default_factory=lambda: ["groups"])
    introspection: IntrospectionConfig | None = None
    sign_in_client: SignInClientConfig | None = None
    """Needed for tools that sign users in (URL-mode elicitation); without it such a tool gets an error."""
    jwks_refetch_interval: NonNegativeFloat = 30.0
    jwks_max_age: PositiveFloat = 600.0

    def settings(self, default_resource: str) -> OAuthSettings:
        """The server's settings (`default_resource` when the config names no `resource`).

        Raises:
            ConfigError: a URL is not http(s), or an algorithm is not asymmetric.
        """
        introspection = self.introspection
        return OAuthSettings(
            issuer=self.issuer,
            resource=self.resource or default_resource,
            audiences=tuple(self.audience),
            jwks_uri=self.jwks_uri,
            required_scopes=tuple(self.required_scopes),
            scopes_supported=tuple(self.scopes_supported),
            algorithms=tuple(self.algorithms),
            leeway=self.leeway,
            principal_claims=tuple(self.principal_claims),
            introspection=None
            if introspection is None
            else IntrospectionSettings(
                client_id=introspection.client_id,
                client_secret=introspection.client_secret,
                endpoint=introspection.endpoint,
                cache_seconds=introspection.cache_seconds,
            ),
            jwks_refetch_interval=self.jwks_refetch_interval,
            jwks_max_age=self.jwks_max_age,
            sign_in_client=None
            if self.sign_in_client is None
            else SignInClientSettings(
                client_id=self.sign_in_client.client_id,
                client_secret=self.sign_in_client.client_secret,
                scopes=tuple(self.sign_in_client.scopes),
            ),
        )


class RateLimitConfig(BaseModel):
    """A token bucket per principal and tool: `calls` at once, refilled evenly over `perSeconds`."""

    model_config = _MODEL_CONFIG

    calls: PositiveInt
    per_seconds: PositiveFloat = 60.0


class PolicyConfig(BaseModel):
    """One rule: which principals it is for, and what it allows, denies and limits for them."""

    model_config = _MODEL_CONFIG

    principals: list[str] = Field(default_factory=lambda: ["*"])
    """Globs over principal names (a token's `sub`, a static token's user)."""
    claims: dict[str, list[str]] = Field(default_factory=dict[str, list[str]])
    """Each named claim must hold one of the listed values (globs); a list claim such as `groups` must contain one."""
    allow_tools: list[str] | None = None
    deny_tools: list[str] = Field(default_factory=list[str])
    allow_resources: list[str] | None = None
    deny_resources: list[str] = Field(default_factory=list[str])
    allow_prompts: list[str] | None = None
    deny_prompts: list[str] = Field(default_factory=list[str])
    rate_limit: RateLimitConfig | None = None

    def rule(self) -> PolicyRule:
        """The server's form of this rule."""
        limit = self.rate_limit
        allowed: dict[Kind, list[str] | None] = {
            "tools": self.allow_tools,
            "resources": self.allow_resources,
            "prompts": self.allow_prompts,
        }
        allow: dict[Kind, tuple[str, ...]] = {k: tuple(globs) for k, globs in allowed.items() if globs is not None}
        deny: dict[Kind, tuple[str, ...]] = {
            "tools": tuple(self.deny_tools),
            "resources": tuple(self.deny_resources),
            "prompts": tuple(self.deny_prompts),
        }
        return PolicyRule(
            principals=tuple(self.principals),
            claims={name: tuple(values) for name, values in self.claims.items()},
            allow=allow,
            deny=deny,
            rate_limit=None if limit is None else RateLimit(calls=limit.calls, per_seconds=limit.per_seconds),
        )


def policy_of(configs: list[PolicyConfig]) -> Policy | None:
    """The policy of the `policies` section (None when it is empty: everything allowed)."""
    return Policy(tuple(config.rule() for config in configs)) if configs else None
