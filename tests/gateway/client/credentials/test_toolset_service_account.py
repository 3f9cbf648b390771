"""A Google service-account credential on `McpToolset` (google-adk's `ServiceAccount`): refused at construction with
a message that names what was given, what the toolset can authenticate with, and what to do instead."""

from __future__ import annotations

from typing import Any

import pytest
from google.adk.auth.auth_credential import ServiceAccount as AdkServiceAccount
from google.adk.auth.auth_credential import ServiceAccountCredential as AdkServiceAccountCredential
from google.adk.tools.openapi_tool.auth.auth_helpers import service_account_scheme_credential

from gateway.client import McpToolset, StreamableHTTPConnectionParams
from gateway.errors import ConfigError
from gateway.tools import AuthCredential, AuthCredentialTypes, HTTPBearer, ServiceAccount

KEY = AdkServiceAccountCredential(
    type="service_account",
    project_id="project",
    private_key_id="key-id",
    private_key="-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----\n",
    client_email="robot@project.iam.gserviceaccount.com",
    client_id="1234",
    auth_uri="https://accounts.google.com/o/oauth2/auth",
    token_uri="https://oauth2.googleapis.com/token",
    auth_provider_x509_cert_url="https://www.googleapis.com/oauth2/v1/certs",
    client_x509_cert_url="https://www.googleapis.com/robot/v1/metadata/x509/robot",
    universe_domain="googleapis.com",
)
SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]


def adk_application_default() -> tuple[Any, Any]:
    return service_account_scheme_credential(AdkServiceAccount(use_default_credential=True, scopes=SCOPES))


def adk_json_key() -> tuple[Any, Any]:
    return service_account_scheme_credential(AdkServiceAccount(service_account_credential=KEY, scopes=SCOPES))


def ours_with_bearer() -> tuple[Any, Any]:
    account = ServiceAccount(use_default_credential=True, scopes=SCOPES)
    return HTTPBearer(), AuthCredential(auth_type=AuthCredentialTypes.SERVICE_ACCOUNT, service_account=account)


@pytest.mark.parametrize("given", [adk_application_default, adk_json_key, ours_with_bearer])
def test_a_service_account_is_refused_naming_what_is_supported_and_what_to_do(given: Any) -> None:
    scheme, credential = given()
    with pytest.raises(ConfigError) as refused:
        McpToolset(
            connection_params=StreamableHTTPConnectionParams(url="http://127.0.0.1:9/mcp"),
            auth_scheme=scheme,
            auth_credential=credential,
        )
    message = str(refused.value)
    assert "service account" in message
    assert "client_secret" not in message  # not the client-credentials advice: none was meant
    for supported in ("API key", "bearer", "client credentials", "authorization code", "OpenID Connect"):
        assert supported in message
    assert "access_token" in message  # what to do instead: a token obtained with google-auth
    assert "header_provider" in message
    assert "private_key" not in message  # the key itself never appears
