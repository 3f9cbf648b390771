"""A served tool that signs its user in with OAuth2 (authorization code + PKCE) before it runs.

The tool asks for a credential the ADK way (`tool_context.request_credential`); the server sends the user to the
provider's sign-in page through MCP URL-mode elicitation, receives the redirect on `/oauth/callback`, stores the
tokens (encrypted, per user) and runs the tool again, all inside one `tools/call`.

    export ADK_MCP_GATEWAY_CREDENTIAL_KEY=$(python -c \
        "import base64, secrets; print(base64.urlsafe_b64encode(secrets.token_bytes(32)).decode())")
    export OAUTH_AUTHORIZE_URL=https://idp.example/authorize OAUTH_TOKEN_URL=https://idp.example/token
    export OAUTH_CLIENT_ID=... OAUTH_CLIENT_SECRET=... OAUTH_SCOPES="openid profile"
    python examples/sign_in_server.py http 8000    # register http://127.0.0.1:8000/oauth/callback at the provider
    python examples/sign_in_server.py stdio        # callback on $ADK_MCP_GATEWAY_CALLBACK_URL (a loopback URL)

A local provider to try it with: `python -m tests.support.oauth_provider --redirect-uri URL` prints the exports.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import jwt

from gateway.server import serve
from gateway.state import SqliteStateStore
from gateway.tools import (
    AuthConfig,
    AuthCredential,
    AuthCredentialTypes,
    OAuth2,
    OAuth2Auth,
    OAuthFlowAuthorizationCode,
    OAuthFlows,
    ToolContext,
)


def auth_config() -> AuthConfig:
    """The provider and the OAuth client, from the environment (see the module docstring)."""
    scopes = os.environ.get("OAUTH_SCOPES", "").split()
    scheme = OAuth2(
        flows=OAuthFlows(
            authorizationCode=OAuthFlowAuthorizationCode(
                authorizationUrl=os.environ["OAUTH_AUTHORIZE_URL"],
                tokenUrl=os.environ["OAUTH_TOKEN_URL"],
                scopes=dict.fromkeys(scopes, ""),
            )
        )
    )
    client = OAuth2Auth(client_id=os.environ["OAUTH_CLIENT_ID"], client_secret=os.environ.get("OAUTH_CLIENT_SECRET"))
    credential = AuthCredential(auth_type=AuthCredentialTypes.OAUTH2, oauth2=client)
    return AuthConfig(auth_scheme=scheme, raw_auth_credential=credential, credential_key="example-provider")


def whoami(tool_context: ToolContext) -> dict[str, Any]:
    """Who you are signed in as at the OAuth provider (asks you to sign in the first time)."""
    config = auth_config()
    credential = tool_context.get_auth_response(config)
    token = credential.oauth2.access_token if credential is not None and credential.oauth2 is not None else None
    if not token:
        tool_context.request_credential(config)
        return {"pending": "Waiting for you to sign in."}
    # A real tool calls its API here with `Authorization: Bearer <token>`. This one reads the token's own claims
    # (it came straight from the token endpoint, so they are shown, not trusted for anything).
    claims = jwt.decode(token, options={"verify_signature": False})
    return {"subject": claims.get("sub"), "scope": claims.get("scope")}


def main(argv: list[str]) -> None:
    transport = argv[1] if len(argv) > 1 else "stdio"
    port = int(argv[2]) if len(argv) > 2 else 8000
    state = Path(argv[3]) if len(argv) > 3 else Path.home() / ".local/state/adk-mcp-gateway/sign-in-example.db"
    serve([whoami], name="sign-in-example", transport=transport, port=port, state_store=SqliteStateStore(state))


if __name__ == "__main__":
    main(sys.argv)
