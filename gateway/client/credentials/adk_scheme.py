"""ADK's `auth_scheme` + `auth_credential` as a `Credential`, so `McpToolset` takes ADK's auth parameters.

- API key (`in: header | query | cookie`), HTTP bearer / basic / other schemes with a token, or an OAuth2
  credential that already holds an access token: fixed headers (`HeaderCredential`).
- OAuth2 with a `clientCredentials` flow and the client's id and secret: `ClientCredentials` against the flow's
  `tokenUrl`, renewed as it expires.
- OAuth2 with an `authorizationCode` flow, or OpenID Connect: the *calling user's* credential (`UserSignIn`), read
  from the calling tool context (`get_auth_response`); without one, `SignInRequired` is raised and the tool asks for
  it with `tool_context.request_credential` — an ADK agent sees `adk_request_credential`, a client of our server a
  sign-in (URL elicitation). Sessions are kept apart per user.
- A Google service account (`AuthCredential(auth_type='serviceAccount')`) is refused, saying what to do instead:
  exchanging one takes google-auth's blocking token requests, which the toolset does not make.
"""

from __future__ import annotations

import base64
import logging
from collections import OrderedDict
from typing import Final, cast

import httpx2

from gateway.client.credentials.client_credentials import ClientCredentials
from gateway.client.credentials.credential import BearerAuth, Credential, HeaderCredential
from gateway.errors import ConfigError, CredentialError
from gateway.tools import (
    APIKey,
    APIKeyIn,
    AuthConfig,
    AuthCredential,
    AuthScheme,
    OAuth2,
    ReadonlyContext,
    ToolContext,
)

__all__ = ["SignInRequired", "UserSignIn", "credential_from_adk"]

logger = logging.getLogger(__name__)

_REFUSED_KEPT: Final = 4096


class SignInRequired(CredentialError):
    """The calling user has no credential for the toolset yet; the tool asks for one (`request_credential`)."""

    def __init__(self, auth_config: AuthConfig) -> None:
        super().__init__(
            "This toolset needs the user's sign-in (credential key "
            f"{auth_config.credential_key!r}); the call asks for it with request_credential."
        )
        self.auth_config = auth_config


class _UserToken:
    def __init__(self, owner: UserSignIn, user: str) -> None:
        self._owner = owner
        self._user = user

    async def token(self, *, rejected: str | None = None) -> str | None:
        current = self._owner.tokens.get(self._user)
        if current is not None and current == rejected:
            # Refused: forget it, so the next call asks the user again instead of failing in a loop.
            del self._owner.tokens[self._user]
            self._owner.refuse(current)
            return None
        return current


class UserSignIn(Credential):
    """The calling user's OAuth2 credential (authorization code), from the tool context of the call."""

    def __init__(self, auth_config: AuthConfig) -> None:
        self.auth_config = auth_config
        self.tokens: dict[str, str] = {}
        self._auths: dict[str, BearerAuth] = {}
        self._refused: OrderedDict[str, None] = OrderedDict()
        """Tokens the upstream refused (a stored credential still holding one is no sign-in)."""

    def refuse(self, token: str) -> None:
        """Remember that the upstream refused `token`."""
        self._refused[token] = None
        if len(self._refused) > _REFUSED_KEPT:
            self._refused.popitem(last=False)

    def identity(self, context: ReadonlyContext | None) -> str:
        return context.user_id if context is not None else ""

    def describe(self) -> str:
        return f"the user's sign-in (credential key {self.auth_config.credential_key!r})"

    def refused(self, context: ReadonlyContext | None) -> bool:
        return self.identity(context) not in self.tokens

    def signed_in(self, context: ReadonlyContext | None) -> bool:
        """Whether the user of `context` has a credential (in the context, or one given before)."""
        try:
            self.auth(context)
        except SignInRequired:
            return False
        return True

    def auth(self, context: ReadonlyContext | None) -> httpx2.Auth:
        user = self.identity(context)
        answered: AuthCredential | None = None
        if isinstance(context, ToolContext):
            answered = context.get_auth_response(self.auth_config)
        elif context is not None and self.auth_config.credential_key:
            # A listing: the credential resolved for the context (an ADK agent's toolset auth), if any.
            answered = context.get_credential(self.auth_config.credential_key)
        token = answered.oauth2.access_token if answered is not None and answered.oauth2 is not None else None
        if token and token not in self._refused:
            self.tokens[user] = token
        if user not in self.tokens:
            raise SignInRequired(self.auth_config)
        if user not in self._auths:
            self._auths[user] = BearerAuth(_UserToken(self, user))
        return self._auths[user]


def _headers(scheme: AuthScheme, credential: AuthCredential) -> HeaderCredential | None:
    """The fixed headers a credential stands for (ADK's `build_auth_headers`, plus query and cookie API keys)."""
    if credential.oauth2 is not None and credential.oauth2.access_token:
        return HeaderCredential({"Authorization": f"Bearer {credential.oauth2.access_token}"})
    if credential.http is not None:
        http = credential.http
        secrets = http.credentials
        headers: dict[str, str] = {}
        if http.scheme.lower() == "basic" and secrets.username and secrets.password:
            pair = f"{secrets.username}:{secrets.password}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
        elif secrets.token:
            name = "Bearer" if http.scheme.lower() == "bearer" else http.scheme
            headers["Authorization"] = f"{name} {secrets.token}"
        headers.update(http.additional_headers or {})
        return HeaderCredential(headers)
    if credential.api_key is not None:
        if not isinstance(scheme, APIKey):
            raise ConfigError("An API key credential needs an APIKey auth_scheme (it names the header or parameter).")
        if scheme.in_ == APIKeyIn.query:
            return HeaderCredential(params={scheme.name: credential.api_key})
        if scheme.in_ == APIKeyIn.cookie:
            return HeaderCredential({"Cookie": f"{scheme.name}={credential.api_key}"})
        return HeaderCredential({scheme.name: credential.api_key})
    return None


def credential_from_adk(
    auth_scheme: AuthScheme | object,
    auth_credential: AuthCredential | object | None,
    credential_key: str | None = None,
) -> tuple[Credential, AuthConfig]:
    """The `Credential` ADK's toolset auth parameters describe (ours, or google-adk's own classes), and the
    `AuthConfig` they make.

    Raises:
        ConfigError: a combination no credential can be made of (named, with what to give instead).
    """
    config = AuthConfig.model_validate(
        {
            "auth_scheme": _plain(auth_scheme),
            "raw_auth_credential": _plain(auth_credential) if auth_credential is not None else None,
            "credential_key": credential_key,
        }
    )
    return _credential(config), config


_SERVICE_ACCOUNT_REFUSED: Final = (
    "McpToolset does not exchange a Google service account (auth_credential of auth_type 'serviceAccount', e.g. "
    "from google-adk's service_account_scheme_credential) for a token. It authenticates with: an API key, an HTTP "
    "bearer token or basic password, an OAuth2 access token, OAuth2 client credentials (client id and secret at the "
    "flow's tokenUrl), and OAuth2 authorization code or OpenID Connect (each user signs in). Instead, get the token "
    "with google-auth (google.auth.default(scopes=...) or service_account.Credentials.from_service_account_info(...), "
    "then refresh()) and pass it as auth_credential=AuthCredential(auth_type='oauth2', "
    "oauth2=OAuth2Auth(access_token=...)), or, to renew it as it expires, give header_provider= a function of the "
    "context (sync or async) returning {'Authorization': 'Bearer <token>'}."
)


def _credential(config: AuthConfig) -> Credential:
    scheme, credential = config.auth_scheme, config.raw_auth_credential
    if credential is not None and credential.service_account is not None:
        raise ConfigError(_SERVICE_ACCOUNT_REFUSED)
    if credential is not None:
        fixed = _headers(scheme, credential)
        if fixed is not None:
            return fixed
    if isinstance(scheme, OAuth2) and scheme.flows.clientCredentials is not None:
        oauth2 = credential.oauth2 if credential is not None else None
        if oauth2 is None or not oauth2.client_id or not oauth2.client_secret:
            raise ConfigError(
                "An OAuth2 client-credentials auth_scheme needs auth_credential=AuthCredential(auth_type='oauth2', "
                "oauth2=OAuth2Auth(client_id=..., client_secret=...))."
            )
        flow = scheme.flows.clientCredentials
        method = oauth2.token_endpoint_auth_method
        return ClientCredentials(
            client_id=oauth2.client_id,
            client_secret=oauth2.client_secret,
            token_url=flow.tokenUrl,
            scope=" ".join(flow.scopes) or None,
            audience=oauth2.audience,
            auth_method="client_secret_post" if method == "client_secret_post" else "client_secret_basic",
        )
    if isinstance(scheme, OAuth2) and scheme.flows.authorizationCode is None:
        raise ConfigError("McpToolset supports OAuth2 client credentials and authorization code flows.")
    if credential is not None and credential.api_key is None and credential.http is None and credential.oauth2 is None:
        raise ConfigError(f"McpToolset cannot authenticate with a {credential.auth_type.value} credential.")
    return UserSignIn(config)


def _plain(model: object) -> object:
    """A model (ours or google-adk's) as the plain data our models validate."""
    dump = getattr(model, "model_dump", None)
    if dump is None:
        return model
    return cast("object", dump(by_alias=True, mode="json", exclude_none=True))
