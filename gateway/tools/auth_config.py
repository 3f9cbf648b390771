"""`AuthConfig`: what a tool asks for when it needs a credential (ADK's `AuthConfig` and `AuthToolArguments`).

A tool passes one to `ToolContext.request_credential` and reads the answer with `ToolContext.get_auth_response`.
`credential_key` names the credential in the credential store; without one it is derived from the scheme and the
raw credential (less the tokens and per-sign-in fields), exactly as google-adk derives it, so one scheme and client
always name one stored credential.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel

from gateway.tools.auth_credential import (
    AuthCredential,
    _CredentialModel,  # pyright: ignore[reportPrivateUsage]
)
from gateway.tools.auth_schemes import AuthScheme

__all__ = ["AuthConfig", "AuthToolArguments"]

_PER_SIGN_IN = (
    "auth_uri",
    "state",
    "auth_response_uri",
    "auth_code",
    "access_token",
    "refresh_token",
    "expires_at",
    "expires_in",
    "redirect_uri",
)
"""OAuth2 fields that change with every sign-in, so they do not name the credential."""


def _digest(model: BaseModel) -> str:
    if model.model_extra:
        model = model.model_copy(deep=True)
        if model.model_extra is not None:
            model.model_extra.clear()
    dumped = model.model_dump(by_alias=True, exclude_none=True, mode="json")
    canonical = json.dumps(dumped, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


class AuthConfig(_CredentialModel):
    """The scheme a tool's API uses, the credential to start from, and (once signed in) the exchanged credential.

    Attributes:
        auth_scheme: how the API authenticates (OAuth2 flows, API key, bearer, OpenID Connect).
        raw_auth_credential: what the tool configures: an OAuth2 client id and secret, or nothing for an API key
            the user supplies.
        exchanged_auth_credential: the credential after sign-in (tokens), filled in by the server.
        credential_key: the name the credential is stored under for each user.
    """

    auth_scheme: AuthScheme
    raw_auth_credential: AuthCredential | None = None
    exchanged_auth_credential: AuthCredential | None = None
    credential_key: str | None = None

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        if self.credential_key:
            return
        for part in (self.raw_auth_credential, self.auth_scheme):
            extra = part.model_extra if part is not None else None
            for name in ("credential_key", "credentialKey"):
                value = (extra or {}).get(name)
                if isinstance(value, str) and value:
                    self.credential_key = value
                    return
        self.credential_key = self._derived_key()

    def _derived_key(self) -> str:
        scheme = self.auth_scheme
        scheme_part = f"{scheme.type_.name}_{_digest(scheme)}"
        credential = self.raw_auth_credential
        if credential is None:
            return f"adk_{scheme_part}_"
        if credential.oauth2 is not None:
            credential = credential.model_copy(deep=True)
            oauth2 = credential.oauth2
            assert oauth2 is not None
            for name in _PER_SIGN_IN:
                setattr(oauth2, name, None)
        return f"adk_{scheme_part}_{credential.auth_type.value}_{_digest(credential)}"


class AuthToolArguments(_CredentialModel):
    """The arguments of ADK's `adk_request_credential` function call: which call asks, and for what."""

    function_call_id: str
    auth_config: AuthConfig
