"""`AuthScheme`: how a tool's API wants to be authenticated, as OpenAPI 3 security schemes (ADK's `AuthScheme`).

The classes and field names are those google-adk uses (it takes them from FastAPI's OpenAPI models): `APIKey`,
`HTTPBase`, `HTTPBearer`, `OAuth2` with `OAuthFlows`, `OpenIdConnect`, and ADK's flattened
`OpenIdConnectWithConfig`. OpenAPI spells its fields in camelCase (`authorizationUrl`, `tokenUrl`,
`bearerFormat`), and so do these; `type` and `in` are `type_` and `in_` in Python. Unknown fields are kept, as
ADK keeps them.
"""

from __future__ import annotations

import enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gateway.tools._credential_model import from_other_model

__all__ = [
    "APIKey",
    "APIKeyIn",
    "AuthScheme",
    "AuthSchemeType",
    "HTTPBase",
    "HTTPBearer",
    "OAuth2",
    "OAuthFlow",
    "OAuthFlowAuthorizationCode",
    "OAuthFlowClientCredentials",
    "OAuthFlowImplicit",
    "OAuthFlowPassword",
    "OAuthFlows",
    "OAuthGrantType",
    "OpenIdConnect",
    "OpenIdConnectWithConfig",
]


class AuthSchemeType(enum.StrEnum):
    """The OpenAPI security scheme types (ADK's `AuthSchemeType`)."""

    apiKey = "apiKey"
    http = "http"
    oauth2 = "oauth2"
    openIdConnect = "openIdConnect"


class APIKeyIn(enum.StrEnum):
    """Where an API key travels."""

    query = "query"
    header = "header"
    cookie = "cookie"


class _OpenApiModel(BaseModel):
    """Extra fields kept; FastAPI's and google-adk's instances of the same model are accepted and converted."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _accept_other_models(cls, data: Any) -> Any:
        return from_other_model(cls, data)


class _Scheme(_OpenApiModel):
    description: str | None = None


class APIKey(_Scheme):
    """An API key sent in a header, query parameter or cookie named `name`."""

    type_: Literal[AuthSchemeType.apiKey] = Field(default=AuthSchemeType.apiKey, alias="type")
    in_: APIKeyIn = Field(alias="in")
    name: str


class HTTPBase(_Scheme):
    """An HTTP `Authorization` scheme (RFC 7235), e.g. `basic`."""

    type_: Literal[AuthSchemeType.http] = Field(default=AuthSchemeType.http, alias="type")
    scheme: str


class HTTPBearer(HTTPBase):
    """`Authorization: Bearer <token>`."""

    scheme: Literal["bearer"] = "bearer"  # pyright: ignore[reportIncompatibleVariableOverride]
    bearerFormat: str | None = None


class OAuthFlow(_OpenApiModel):
    """What every OAuth2 flow declares: the scopes it offers (name -> description) and a refresh URL."""

    refreshUrl: str | None = None
    scopes: dict[str, str] = Field(default_factory=dict[str, str])


class OAuthFlowImplicit(OAuthFlow):
    authorizationUrl: str


class OAuthFlowPassword(OAuthFlow):
    tokenUrl: str


class OAuthFlowClientCredentials(OAuthFlow):
    tokenUrl: str


class OAuthFlowAuthorizationCode(OAuthFlow):
    authorizationUrl: str
    tokenUrl: str


class OAuthFlows(_OpenApiModel):
    """The OAuth2 flows a scheme supports (set at least one)."""

    implicit: OAuthFlowImplicit | None = None
    password: OAuthFlowPassword | None = None
    clientCredentials: OAuthFlowClientCredentials | None = None
    authorizationCode: OAuthFlowAuthorizationCode | None = None


class OAuthGrantType(enum.StrEnum):
    """The OAuth2 grant a flow uses (ADK's `OAuthGrantType`)."""

    CLIENT_CREDENTIALS = "client_credentials"
    AUTHORIZATION_CODE = "authorization_code"
    IMPLICIT = "implicit"
    PASSWORD = "password"

    @staticmethod
    def from_flow(flow: OAuthFlows) -> OAuthGrantType | None:
        """The grant of the first flow set, in ADK's order (client credentials first)."""
        if flow.clientCredentials:
            return OAuthGrantType.CLIENT_CREDENTIALS
        if flow.authorizationCode:
            return OAuthGrantType.AUTHORIZATION_CODE
        if flow.implicit:
            return OAuthGrantType.IMPLICIT
        if flow.password:
            return OAuthGrantType.PASSWORD
        return None


class OAuth2(_Scheme):
    """OAuth2 with the flows the API supports."""

    type_: Literal[AuthSchemeType.oauth2] = Field(default=AuthSchemeType.oauth2, alias="type")
    flows: OAuthFlows


class OpenIdConnect(_Scheme):
    """OpenID Connect, discovered from `openIdConnectUrl`; `scopes` to ask for (`openid` alone when None)."""

    type_: Literal[AuthSchemeType.openIdConnect] = Field(default=AuthSchemeType.openIdConnect, alias="type")
    openIdConnectUrl: str
    scopes: list[str] | None = None


class OpenIdConnectWithConfig(_Scheme):
    """OpenID Connect with its endpoints given directly (ADK's flattened form; no discovery needed)."""

    type_: Literal[AuthSchemeType.openIdConnect] = Field(default=AuthSchemeType.openIdConnect, alias="type")
    authorization_endpoint: str
    token_endpoint: str
    userinfo_endpoint: str | None = None
    revocation_endpoint: str | None = None
    token_endpoint_auth_methods_supported: list[str] | None = None
    grant_types_supported: list[str] | None = None
    scopes: list[str] | None = None


AuthScheme = APIKey | HTTPBearer | HTTPBase | OAuth2 | OpenIdConnectWithConfig | OpenIdConnect
"""Any of the schemes above (ADK's `AuthScheme`); a dict is read as the one its `type` and fields name."""
