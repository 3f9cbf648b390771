"""google-adk's auth classes and ours, both ways: `AuthConfig`, `AuthCredential` and the `AuthScheme`s.

Ours accept google-adk's (and FastAPI's OpenAPI scheme models) directly wherever they are expected
(`AuthConfig.model_validate(adk_config)`, `tool_context.request_credential(adk_config)`); these functions name the
direction, and the `*_to_adk` ones give google-adk's own classes, keeping the scheme's exact class (an
`HTTPBearer` stays one, where validating the wire form through FastAPI's union would make it an `HTTPBase`).
"""

from __future__ import annotations

from typing import Any

from fastapi.openapi import models as openapi
from google.adk.auth.auth_credential import AuthCredential as AdkAuthCredential
from google.adk.auth.auth_schemes import OpenIdConnectWithConfig as AdkOpenIdConnectWithConfig
from google.adk.auth.auth_tool import AuthConfig as AdkAuthConfig

from gateway.tools import (
    APIKey,
    AuthConfig,
    AuthCredential,
    AuthScheme,
    HTTPBase,
    HTTPBearer,
    OAuth2,
    OpenIdConnect,
    OpenIdConnectWithConfig,
)

__all__ = [
    "auth_config_from_adk",
    "auth_config_to_adk",
    "auth_credential_from_adk",
    "auth_credential_to_adk",
    "auth_scheme_from_adk",
    "auth_scheme_to_adk",
]

_ADK_SCHEME_CLASSES: dict[type[Any], type[Any]] = {
    APIKey: openapi.APIKey,
    HTTPBearer: openapi.HTTPBearer,
    HTTPBase: openapi.HTTPBase,
    OAuth2: openapi.OAuth2,
    OpenIdConnect: openapi.OpenIdConnect,
    OpenIdConnectWithConfig: AdkOpenIdConnectWithConfig,
}


def _wire(model: Any) -> dict[str, Any]:
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


def auth_scheme_from_adk(scheme: Any) -> AuthScheme:
    """One of our schemes from google-adk's (FastAPI's OpenAPI models, `OpenIdConnectWithConfig`)."""
    return AuthConfig.model_validate({"authScheme": scheme}).auth_scheme


def auth_scheme_to_adk(scheme: AuthScheme) -> Any:
    """google-adk's scheme class (FastAPI's OpenAPI model, or ADK's `OpenIdConnectWithConfig`) for one of ours."""
    return _ADK_SCHEME_CLASSES[type(scheme)].model_validate(_wire(scheme))


def auth_credential_from_adk(credential: AdkAuthCredential) -> AuthCredential:
    """Our `AuthCredential` from google-adk's."""
    return AuthCredential.model_validate(credential)


def auth_credential_to_adk(credential: AuthCredential) -> AdkAuthCredential:
    """google-adk's `AuthCredential` from ours."""
    return AdkAuthCredential.model_validate(_wire(credential))


def auth_config_from_adk(config: AdkAuthConfig) -> AuthConfig:
    """Our `AuthConfig` from google-adk's (same `credential_key`)."""
    return AuthConfig.model_validate(config)


def auth_config_to_adk(config: AuthConfig) -> AdkAuthConfig:
    """google-adk's `AuthConfig` from ours (same `credential_key`, the scheme's class kept)."""
    return AdkAuthConfig(
        auth_scheme=auth_scheme_to_adk(config.auth_scheme),
        raw_auth_credential=None
        if config.raw_auth_credential is None
        else auth_credential_to_adk(config.raw_auth_credential),
        exchanged_auth_credential=None
        if config.exchanged_auth_credential is None
        else auth_credential_to_adk(config.exchanged_auth_credential),
        credential_key=config.credential_key,
    )
