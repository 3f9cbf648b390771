"""The `auth` entry of an upstream in the gateway config: how the gateway authenticates to that server.

    "auth": {"type": "clientCredentials", "issuer": "https://idp.example.com", "clientId": "gw",
             "clientSecret": "${GW_SECRET}", "scope": "tools:read"}
    "auth": {"type": "oauth", "scope": "tools:read"}          # a user login: `adk-mcp-gateway login CONFIG KEY`
    "auth": {"type": "tokenExchange", "tokenUrl": "https://idp.example.com/token", "clientId": "gw",
             "clientSecret": "${GW_SECRET}", "audience": "docs"}
    "auth": {"type": "passThrough"}                           # forward the downstream client's own token

Static `headers` need no `auth` entry. Without `passThrough`, the downstream client's token never reaches an
upstream. `resource` (RFC 8707) defaults to the upstream's URL; `""` leaves it out.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from gateway.client.credentials import (
    ClientCredentials,
    Credential,
    PassThrough,
    StoredLogin,
    TokenExchange,
    TokenFile,
)

__all__ = [
    "ClientCredentialsAuth",
    "OAuthLoginAuth",
    "PassThroughAuth",
    "TokenExchangeAuth",
    "UpstreamAuth",
    "upstream_credential",
]

_MODEL_CONFIG = ConfigDict(
    extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True, hide_input_in_errors=True
)
AuthMethod = Literal["client_secret_basic", "client_secret_post", "none"]


class _AuthorizationServer(BaseModel):
    model_config = _MODEL_CONFIG

    token_url: str | None = None
    """The token endpoint (or give `issuer`)."""
    issuer: str | None = None
    """The authorization server's issuer URL; its RFC 8414 metadata names the token endpoint."""
    client_id: str
    client_secret: str | None = Field(default=None, repr=False)
    auth_method: AuthMethod = "client_secret_basic"
    scope: str | None = None
    resource: str | None = None
    """RFC 8707 resource indicator; default: the upstream's URL; `""`: none."""
    audience: str | None = None

    @model_validator(mode="after")
    def _one_token_endpoint(self) -> _AuthorizationServer:
        if (self.token_url is None) == (self.issuer is None):
            raise ValueError("give either 'tokenUrl' or 'issuer' (whose metadata names the token endpoint)")
        return self

    def resource_for(self, url: str) -> str | None:
        if self.resource is None:
            return url
        return self.resource or None


class ClientCredentialsAuth(_AuthorizationServer):
    """The gateway's own token, from the OAuth client credentials grant."""

    type: Literal["clientCredentials"]

    @model_validator(mode="after")
    def _secret_given(self) -> ClientCredentialsAuth:
        if self.client_secret is None:
            raise ValueError("client credentials need 'clientSecret' (e.g. \"${GW_CLIENT_SECRET}\")")
        return self


class TokenExchangeAuth(_AuthorizationServer):
    """The downstream principal's token exchanged (RFC 8693) for one made for this upstream."""

    type: Literal["tokenExchange"]


class OAuthLoginAuth(BaseModel):
    """A user login (authorization code + PKCE), done once with `adk-mcp-gateway login CONFIG KEY`."""

    model_config = _MODEL_CONFIG

    type: Literal["oauth"]
    scope: str | None = None
    client_id: str | None = None
    """A client registered beforehand (default: dynamic client registration)."""
    client_secret: str | None = Field(default=None, repr=False)
    redirect_port: int = Field(default=0, ge=0, le=65535)
    """The port of the login's redirect listener on 127.0.0.1 (0: any; a pre-registered client needs its own)."""


class PassThroughAuth(BaseModel):
    """The downstream client's own bearer token, forwarded unchanged (never done without this entry)."""

    model_config = _MODEL_CONFIG

    type: Literal["passThrough"]


UpstreamAuth = Annotated[
    ClientCredentialsAuth | OAuthLoginAuth | TokenExchangeAuth | PassThroughAuth, Field(discriminator="type")
]


def upstream_credential(auth: UpstreamAuth, *, key: str, url: str, config_path: str) -> Credential:
    """The credential an `auth` entry describes, for the upstream `key` at `url`."""
    if isinstance(auth, ClientCredentialsAuth | TokenExchangeAuth):
        grant = ClientCredentials if isinstance(auth, ClientCredentialsAuth) else TokenExchange
        return grant(
            client_id=auth.client_id,
            # Client credentials always have a secret (validated); without one, an empty secret is not sent either.
            client_secret=auth.client_secret or "",
            token_url=auth.token_url,
            issuer=auth.issuer,
            scope=auth.scope,
            resource=auth.resource_for(url),
            audience=auth.audience,
            auth_method=auth.auth_method,
        )
    if isinstance(auth, OAuthLoginAuth):
        return StoredLogin(TokenFile(key, url), login_command=f"adk-mcp-gateway login {config_path} {key}")
    return PassThrough()
