"""A google-adk agent whose MCP toolset needs the user's own OAuth sign-in (authorization code + PKCE).

    export DOCS_MCP_URL=https://docs.example/mcp     # an MCP server that accepts the provider's access tokens
    export OAUTH_AUTHORIZE_URL=https://idp.example/authorize OAUTH_TOKEN_URL=https://idp.example/token
    export OAUTH_CLIENT_ID=... OAUTH_CLIENT_SECRET=... OAUTH_REDIRECT_URI=http://127.0.0.1:9/app/oauth-callback
    python examples/adk_sign_in.py                   # needs the adk extra: pip install "adk-mcp-gateway[adk]"

The agent's `McpToolset` has an OAuth2 authorization-code `auth_scheme`. Before the toolset lists anything, ADK
asks the app for the user's credential with its own `adk_request_credential` function call. This script plays the
app and the user: it opens the authorization URL ADK made (a provider that approves at once, such as the
loopback test provider `python -m tests.support.oauth_provider`, redirects straight back), hands the URL it was
sent back to to ADK as the auth response, and ADK exchanges the code. The toolset then lists and calls the
upstream with that user's token; the Runner's credential service keeps the sign-in for later turns.

With GOOGLE_API_KEY set the agent uses Gemini (ADK_MODEL, default gemini-2.5-flash); without it, a scripted
stand-in model calls `whoami`, so the example runs offline. `tests/examples/test_adk_sign_in_example.py` runs it
against the loopback provider and an OAuth-protected MCP server.
"""

from __future__ import annotations

import json
import os

import anyio
import httpx2
from google.adk.agents import LlmAgent
from google.adk.auth.auth_tool import AuthToolArguments
from google.adk.auth.credential_service.in_memory_credential_service import InMemoryCredentialService
from google.adk.events import Event
from google.adk.models import BaseLlm
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types
from stand_in_model import answer, model, tool_call

from gateway.adk import to_adk
from gateway.client import McpToolset, StreamableHTTPConnectionParams
from gateway.tools import (
    AuthCredential,
    AuthCredentialTypes,
    OAuth2,
    OAuth2Auth,
    OAuthFlowAuthorizationCode,
    OAuthFlows,
)

APP, USER = "adk-sign-in-example", "ada"
REQUEST_CREDENTIAL = "adk_request_credential"


def _model() -> BaseLlm | str:
    return model(tool_call("whoami"), answer("You are signed in to the docs server."))


def docs_toolset() -> McpToolset:
    """The docs server, each user signing in with their own account (the app is a confidential OAuth client)."""
    flow = OAuthFlowAuthorizationCode(
        authorizationUrl=os.environ["OAUTH_AUTHORIZE_URL"], tokenUrl=os.environ["OAUTH_TOKEN_URL"]
    )
    client = OAuth2Auth(
        client_id=os.environ["OAUTH_CLIENT_ID"],
        client_secret=os.environ.get("OAUTH_CLIENT_SECRET"),
        redirect_uri=os.environ["OAUTH_REDIRECT_URI"],
        code_challenge_method="S256",
    )
    return McpToolset(
        connection_params=StreamableHTTPConnectionParams(url=os.environ["DOCS_MCP_URL"]),
        auth_scheme=OAuth2(flows=OAuthFlows(authorizationCode=flow)),
        auth_credential=AuthCredential(auth_type=AuthCredentialTypes.OAUTH2, oauth2=client),
        credential_key="docs",
    )


def _show(event: Event) -> types.FunctionCall | None:
    """Print what happened; return ADK's credential request, if any."""
    asked = None
    for call in event.get_function_calls():
        print(f"call      {call.name}")
        if call.name == REQUEST_CREDENTIAL:
            asked = call
    for response in event.get_function_responses():
        print(f"response  {response.name} -> {json.dumps(response.response, default=str)}")
    if event.is_final_response() and event.content and event.content.parts and event.content.parts[0].text:
        print(f"answer    {event.content.parts[0].text}")
    return asked


async def sign_in(request: types.FunctionCall) -> types.Content:
    """What the app does with `adk_request_credential`: send the user to the authorization URL, and answer with
    the auth config holding the URL the provider sent the browser back to."""
    config = AuthToolArguments.model_validate(request.args).auth_config
    oauth2 = config.exchanged_auth_credential.oauth2 if config.exchanged_auth_credential else None
    if oauth2 is None or not oauth2.auth_uri:
        raise RuntimeError("ADK's credential request carries no authorization URL.")
    print(f"sign in   {oauth2.auth_uri.partition('?')[0]}")
    # The user's browser: a real provider shows its sign-in page here; this one approves and redirects at once.
    async with httpx2.AsyncClient(timeout=30) as browser:
        landing = await browser.get(oauth2.auth_uri)
    if not landing.is_redirect:
        raise RuntimeError(f"The provider answered {landing.status_code} instead of redirecting back.")
    oauth2.auth_response_uri = landing.headers["location"]
    print("signed in (the app hands the redirect to ADK, which exchanges the code)")
    answer = types.FunctionResponse(
        id=request.id, name=REQUEST_CREDENTIAL, response=config.model_dump(mode="json", exclude_none=True)
    )
    return types.Content(role="user", parts=[types.Part(function_response=answer)])


async def main() -> None:
    docs = docs_toolset()
    agent = LlmAgent(name="assistant", model=_model(), instruction="Answer with the docs tools.", tools=[to_adk(docs)])
    sessions = InMemorySessionService()
    runner = Runner(app_name=APP, agent=agent, session_service=sessions, credential_service=InMemoryCredentialService())
    session = await sessions.create_session(app_name=APP, user_id=USER)
    message: types.Content | None = types.Content(role="user", parts=[types.Part(text="Who am I on the docs server?")])
    try:
        while message is not None:
            asked: types.FunctionCall | None = None
            async for event in runner.run_async(user_id=USER, session_id=session.id, new_message=message):
                asked = _show(event) or asked
            message = await sign_in(asked) if asked is not None else None
    finally:
        await runner.close()
        await docs.close()


if __name__ == "__main__":
    anyio.run(main)
