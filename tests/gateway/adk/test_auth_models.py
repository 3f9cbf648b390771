"""google-adk's auth classes are accepted by ours and converted both ways, keeping the credential key."""

from __future__ import annotations

import pytest
from fastapi.openapi import models as openapi
from google.adk.auth import AuthConfig as AdkAuthConfig
from google.adk.auth import AuthCredential as AdkAuthCredential
from google.adk.auth import AuthCredentialTypes as AdkAuthCredentialTypes
from google.adk.auth import OAuth2Auth as AdkOAuth2Auth
from google.adk.auth.auth_schemes import OpenIdConnectWithConfig as AdkOpenIdConnectWithConfig

from gateway.adk.auth import (
    auth_config_from_adk,
    auth_config_to_adk,
    auth_credential_from_adk,
    auth_credential_to_adk,
    auth_scheme_to_adk,
)
from gateway.tools import AuthConfig, HTTPBearer, OAuth2, OpenIdConnectWithConfig, ToolContext

# google-adk's AuthConfig derives a missing credential key through a method it marks deprecated (its own call).
pytestmark = pytest.mark.filterwarnings("ignore:This method is deprecated:DeprecationWarning")

ADK_SCHEMES = [
    openapi.APIKey(**{"in": openapi.APIKeyIn.header, "name": "X-API-Key"}),
    openapi.HTTPBearer(bearerFormat="JWT"),
    openapi.HTTPBase(scheme="basic"),
    openapi.OAuth2(
        flows=openapi.OAuthFlows(
            authorizationCode=openapi.OAuthFlowAuthorizationCode(
                authorizationUrl="https://idp/authorize", tokenUrl="https://idp/token", scopes={"read": "Read"}
            )
        )
    ),
    openapi.OpenIdConnect(openIdConnectUrl="https://idp/.well-known/openid-configuration"),
    AdkOpenIdConnectWithConfig(authorization_endpoint="https://idp/authorize", token_endpoint="https://idp/token"),
]


def adk_client() -> AdkAuthCredential:
    return AdkAuthCredential(
        auth_type=AdkAuthCredentialTypes.OAUTH2, oauth2=AdkOAuth2Auth(client_id="app", client_secret="s3cret")
    )


def test_every_adk_scheme_converts_to_ours_and_back_to_its_own_class_with_the_same_credential_key() -> None:
    for scheme in ADK_SCHEMES:
        adk_config = AdkAuthConfig(auth_scheme=scheme, raw_auth_credential=adk_client())
        ours = auth_config_from_adk(adk_config)
        assert ours.credential_key == adk_config.credential_key
        back = auth_config_to_adk(ours)
        assert type(back.auth_scheme) is type(scheme)
        assert back == adk_config


def test_our_configs_derive_the_same_credential_key_as_adk_for_the_same_scheme_and_client() -> None:
    for scheme in ADK_SCHEMES:
        ours = AuthConfig.model_validate({"authScheme": scheme, "rawAuthCredential": adk_client()})
        assert ours.credential_key == AdkAuthConfig(auth_scheme=scheme, raw_auth_credential=adk_client()).credential_key


def test_our_schemes_become_adks_own_classes() -> None:
    assert type(auth_scheme_to_adk(HTTPBearer())) is openapi.HTTPBearer
    oidc = OpenIdConnectWithConfig(authorization_endpoint="https://idp/a", token_endpoint="https://idp/t")
    assert type(auth_scheme_to_adk(oidc)) is AdkOpenIdConnectWithConfig


def test_credentials_convert_both_ways_with_their_secrets() -> None:
    adk = adk_client()
    ours = auth_credential_from_adk(adk)
    assert ours.oauth2 is not None
    assert ours.oauth2.client_secret == "s3cret"
    assert auth_credential_to_adk(ours) == adk


def test_our_tool_context_accepts_an_adk_auth_config() -> None:
    adk_config = AdkAuthConfig(auth_scheme=ADK_SCHEMES[3], raw_auth_credential=adk_client())
    context = ToolContext(function_call_id="call-1")
    context.request_credential(adk_config)  # pyright: ignore[reportArgumentType]
    recorded = context.actions.requested_auth_configs["call-1"]
    assert isinstance(recorded.auth_scheme, OAuth2)
    assert recorded.credential_key == adk_config.credential_key
    assert context.get_auth_response(adk_config) is None  # pyright: ignore[reportArgumentType]


@pytest.mark.filterwarnings("ignore:\\[EXPERIMENTAL\\]:UserWarning")
def test_a_served_adk_authenticated_tool_declares_that_it_needs_credentials() -> None:
    from google.adk.tools import FunctionTool as AdkFunctionTool
    from google.adk.tools.authenticated_function_tool import AuthenticatedFunctionTool as AdkAuthenticatedFunctionTool

    from gateway.adk import from_adk

    def inbox(credential: AdkAuthCredential | None = None) -> str:
        """Read the inbox."""
        return "ok" if credential else "no"

    config = AdkAuthConfig(auth_scheme=ADK_SCHEMES[1], credential_key="inbox")
    assert from_adk(AdkAuthenticatedFunctionTool(func=inbox, auth_config=config)).needs_credentials  # type: ignore[union-attr]
    assert not from_adk(AdkFunctionTool(inbox)).needs_credentials  # type: ignore[union-attr]
