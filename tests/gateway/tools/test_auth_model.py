"""The ADK-shaped auth model: schemes, credentials, `AuthConfig`, `request_credential` / `get_auth_response`."""

from __future__ import annotations

import pydantic
import pytest

from gateway.tools import (
    APIKey,
    APIKeyIn,
    AuthConfig,
    AuthCredential,
    AuthCredentialTypes,
    AuthenticatedFunctionTool,
    HttpAuth,
    HTTPBase,
    HTTPBearer,
    HttpCredentials,
    OAuth2,
    OAuth2Auth,
    OAuthFlowAuthorizationCode,
    OAuthFlows,
    OAuthGrantType,
    OpenIdConnect,
    OpenIdConnectWithConfig,
    ToolContext,
)


def oauth2_config(**credential: str) -> AuthConfig:
    scheme = OAuth2(
        flows=OAuthFlows(
            authorizationCode=OAuthFlowAuthorizationCode(
                authorizationUrl="https://idp.example/authorize",
                tokenUrl="https://idp.example/token",
                scopes={"read": "Read your things"},
            )
        )
    )
    raw = AuthCredential(
        auth_type=AuthCredentialTypes.OAUTH2, oauth2=OAuth2Auth(client_id="app", client_secret="s3cret", **credential)
    )
    return AuthConfig(auth_scheme=scheme, raw_auth_credential=raw)


def test_schemes_are_read_from_their_openapi_wire_form_as_the_class_their_type_and_fields_name() -> None:
    cases = {
        APIKey: {"type": "apiKey", "in": "header", "name": "X-API-Key"},
        HTTPBearer: {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
        HTTPBase: {"type": "http", "scheme": "basic"},
        OAuth2: {"type": "oauth2", "flows": {"clientCredentials": {"tokenUrl": "https://idp/token"}}},
        OpenIdConnect: {"type": "openIdConnect", "openIdConnectUrl": "https://idp/.well-known/openid-configuration"},
        OpenIdConnectWithConfig: {
            "type": "openIdConnect",
            "authorization_endpoint": "https://idp/authorize",
            "token_endpoint": "https://idp/token",
        },
    }
    for expected, wire in cases.items():
        scheme = AuthConfig.model_validate({"authScheme": wire}).auth_scheme
        assert type(scheme) is expected
        assert scheme.model_dump(by_alias=True, mode="json", exclude_none=True) == {
            **wire,
            **(
                {"flows": {"clientCredentials": {"tokenUrl": "https://idp/token", "scopes": {}}}}
                if expected is OAuth2
                else {}
            ),
        }
    assert APIKey.model_validate(cases[APIKey]).in_ is APIKeyIn.header


def test_an_oauth2_flow_names_its_grant_as_adk_does() -> None:
    config = oauth2_config()
    assert isinstance(config.auth_scheme, OAuth2)
    assert OAuthGrantType.from_flow(config.auth_scheme.flows) is OAuthGrantType.AUTHORIZATION_CODE


def test_credentials_travel_in_camel_case_and_keep_unknown_fields() -> None:
    credential = AuthCredential.model_validate(
        {"authType": "oauth2", "oauth2": {"clientId": "app", "accessToken": "tok", "vendorField": 1}}
    )
    assert credential.oauth2 is not None
    assert credential.oauth2.access_token == "tok"
    assert credential.oauth2.model_extra == {"vendorField": 1}
    assert credential.model_dump(by_alias=True, exclude_none=True)["oauth2"]["accessToken"] == "tok"


def test_no_secret_shows_in_repr_or_in_a_validation_error() -> None:
    credential = AuthCredential(
        auth_type=AuthCredentialTypes.HTTP,
        http=HttpAuth(scheme="bearer", credentials=HttpCredentials(token="tok-SECRET"), extra_secret="x-SECRET"),
        api_key="key-SECRET",
        oauth2=OAuth2Auth(client_secret="cs-SECRET", access_token="at-SECRET", refresh_token="rt-SECRET"),
    )
    config = AuthConfig(auth_scheme=HTTPBearer(), raw_auth_credential=credential)
    assert "SECRET" not in repr(config)
    assert "SECRET" not in str(config)
    with pytest.raises(pydantic.ValidationError) as caught:
        AuthCredential.model_validate({"authType": "oauth2", "oauth2": {"accessToken": ["leaked-SECRET"]}})
    assert "SECRET" not in str(caught.value)


def test_the_credential_key_is_derived_from_scheme_and_client_and_not_from_one_sign_ins_tokens() -> None:
    plain = oauth2_config()
    signed_in = oauth2_config(access_token="a", refresh_token="r", state="s", auth_uri="https://x")
    assert plain.credential_key == signed_in.credential_key
    assert plain.credential_key is not None
    assert plain.credential_key.startswith("adk_oauth2_")
    other_client = oauth2_config()
    assert other_client.raw_auth_credential is not None
    assert other_client.raw_auth_credential.oauth2 is not None
    other_client.raw_auth_credential.oauth2.client_id = "another-app"
    assert (
        AuthConfig(
            auth_scheme=other_client.auth_scheme, raw_auth_credential=other_client.raw_auth_credential
        ).credential_key
        != plain.credential_key
    )
    assert AuthConfig(auth_scheme=HTTPBearer(), credential_key="mine").credential_key == "mine"


def test_request_credential_records_the_config_for_this_call_and_needs_a_call_id() -> None:
    context = ToolContext(function_call_id="call-1")
    config = oauth2_config()
    context.request_credential(config)
    recorded = context.actions.requested_auth_configs["call-1"]
    assert recorded == config
    assert recorded is not config
    context.function_call_id = None
    with pytest.raises(ValueError, match="function_call_id"):
        context.request_credential(config)


def test_get_auth_response_gives_the_credential_stored_for_the_key_and_none_before() -> None:
    config = oauth2_config()
    assert config.credential_key is not None
    signed_in = AuthCredential(auth_type=AuthCredentialTypes.OAUTH2, oauth2=OAuth2Auth(access_token="tok"))
    assert ToolContext().get_auth_response(config) is None
    context = ToolContext(credentials={config.credential_key: signed_in})
    found = context.get_auth_response(config)
    assert found == signed_in
    assert found is not signed_in
    assert context.get_auth_response(AuthConfig(auth_scheme=HTTPBearer())) is None


def test_get_auth_response_reads_an_adk_flows_answer_from_temp_state_as_adk_does() -> None:
    config = AuthConfig(auth_scheme=HTTPBearer(), credential_key="bearer")
    wire = {"authType": "http", "http": {"scheme": "bearer", "credentials": {"token": "tok"}}}
    context = ToolContext(state={"temp:bearer": wire})
    found = context.get_auth_response(config)
    assert found is not None
    assert found.http is not None
    assert found.http.credentials.token == "tok"


def api_key_config(raw_key: str | None = None) -> AuthConfig:
    raw = None if raw_key is None else AuthCredential(auth_type=AuthCredentialTypes.API_KEY, api_key=raw_key)
    return AuthConfig(
        auth_scheme=APIKey(**{"in": APIKeyIn.header, "name": "X-Key"}), raw_auth_credential=raw, credential_key="k"
    )


def read_inbox(folder: str, credential: AuthCredential | None = None) -> dict[str, str | None]:
    """Read a mail folder."""
    return {"folder": folder, "key": credential.api_key if credential else None}


@pytest.mark.anyio
async def test_an_authenticated_function_tool_requests_a_credential_until_there_is_one_and_then_passes_it() -> None:
    tool = AuthenticatedFunctionTool(func=read_inbox, auth_config=api_key_config())
    declaration = tool.get_declaration()
    assert "credential" not in (declaration.parameters_json_schema or {}).get("properties", {})
    assert tool.needs_credentials
    context = ToolContext(function_call_id="call-1")
    assert await tool.run_async(args={"folder": "inbox"}, tool_context=context) == "Pending User Authorization."
    assert context.actions.requested_auth_configs["call-1"].credential_key == "k"
    signed_in = ToolContext(credentials={"k": AuthCredential(auth_type=AuthCredentialTypes.API_KEY, api_key="user")})
    assert await tool.run_async(args={"folder": "inbox"}, tool_context=signed_in) == {"folder": "inbox", "key": "user"}
    # The model cannot pass a credential of its own.
    forged = await tool.run_async(args={"folder": "inbox", "credential": "x"}, tool_context=ToolContext())
    assert forged == "Pending User Authorization."


@pytest.mark.anyio
async def test_an_authenticated_function_tool_with_a_complete_configured_credential_never_asks() -> None:
    tool = AuthenticatedFunctionTool(func=read_inbox, auth_config=api_key_config("configured"))
    assert not tool.needs_credentials
    assert await tool.run_async(args={"folder": "a"}, tool_context=ToolContext()) == {
        "folder": "a",
        "key": "configured",
    }
    plain = AuthenticatedFunctionTool(func=read_inbox, response_for_auth_required={"pending": True})
    assert await plain.run_async(args={"folder": "b"}, tool_context=ToolContext()) == {"folder": "b", "key": None}
