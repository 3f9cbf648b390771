"""`AuthCredential`: the secret a tool authenticates with (ADK's `AuthCredential`, same types and field names).

Fields are snake_case in Python and camelCase on the wire (`accessToken`), as in ADK; unknown fields are kept.
Secret fields (passwords, tokens, keys, the PKCE verifier) never appear in `repr()` or `str()`, nor do the values
of unknown fields, so a credential that reaches a log line or an error message shows which fields are set, not
their values.
"""

from __future__ import annotations

import enum
from typing import Annotated, Literal

from pydantic import Field, model_validator

from gateway.tools._credential_model import CredentialModel as _CredentialModel

__all__ = [
    "AuthCredential",
    "AuthCredentialTypes",
    "HttpAuth",
    "HttpCredentials",
    "OAuth2Auth",
    "ServiceAccount",
    "ServiceAccountCredential",
]

Secret = Annotated[str | None, Field(repr=False)]
"""A secret field: left out of `repr()`."""


class HttpCredentials(_CredentialModel):
    """A user name and password (basic) or a token (bearer)."""

    username: str | None = None
    password: Secret = None
    token: Secret = None


class HttpAuth(_CredentialModel):
    """An HTTP `Authorization` scheme (`basic`, `bearer`) with its credentials."""

    scheme: str
    credentials: HttpCredentials
    additional_headers: Annotated[dict[str, str] | None, Field(repr=False)] = None


class OAuth2Auth(_CredentialModel):
    """An OAuth2 client and, once signed in, its tokens."""

    client_id: str | None = None
    client_secret: Secret = None
    auth_uri: str | None = None
    nonce: str | None = None
    state: str | None = None
    redirect_uri: str | None = None
    auth_response_uri: Secret = None
    auth_code: Secret = None
    access_token: Secret = None
    refresh_token: Secret = None
    id_token: Secret = None
    expires_at: int | None = None
    expires_in: int | None = None
    audience: str | None = None
    prompt: str | None = None
    code_verifier: Secret = None
    code_challenge_method: str | None = None
    token_endpoint_auth_method: (
        Literal["client_secret_basic", "client_secret_post", "client_secret_jwt", "private_key_jwt"] | None
    ) = "client_secret_basic"


class ServiceAccountCredential(_CredentialModel):
    """A Google service account's JSON key."""

    type_: str = Field("", alias="type")
    project_id: str
    private_key_id: Annotated[str, Field(repr=False)]
    private_key: Annotated[str, Field(repr=False)]
    client_email: str
    client_id: str
    auth_uri: str
    token_uri: str
    auth_provider_x509_cert_url: str
    client_x509_cert_url: str
    universe_domain: str


class ServiceAccount(_CredentialModel):
    """A Google service account: a JSON key, or the application default credentials."""

    service_account_credential: ServiceAccountCredential | None = None
    scopes: list[str] | None = None
    use_default_credential: bool | None = False
    use_id_token: bool | None = False
    audience: str | None = None

    @model_validator(mode="after")
    def _check(self) -> ServiceAccount:
        if not self.use_default_credential and self.service_account_credential is None:
            raise ValueError("service_account_credential is required when use_default_credential is False.")
        if self.use_id_token and not self.audience:
            raise ValueError("audience is required when use_id_token is True (the URL of the receiving service).")
        return self


class AuthCredentialTypes(enum.StrEnum):
    """The kinds of credential (ADK's `AuthCredentialTypes`)."""

    API_KEY = "apiKey"
    HTTP = "http"
    OAUTH2 = "oauth2"
    OPEN_ID_CONNECT = "openIdConnect"
    SERVICE_ACCOUNT = "serviceAccount"


class AuthCredential(_CredentialModel):
    """A credential of one of the `AuthCredentialTypes`, in the field that type uses.

    Examples:
        `AuthCredential(auth_type=AuthCredentialTypes.API_KEY, api_key="...")`;
        `AuthCredential(auth_type=AuthCredentialTypes.OAUTH2, oauth2=OAuth2Auth(client_id="...", client_secret="..."))`.
    """

    auth_type: AuthCredentialTypes
    resource_ref: str | None = None
    api_key: Secret = None
    http: HttpAuth | None = None
    service_account: ServiceAccount | None = None
    oauth2: OAuth2Auth | None = None
