"""A gateway config's `tools` entry: an `McpToolset` for the OAuth-protected docs server, each user signing in.

`"tools": ["tests/gateway/server/docs_toolset.py:TOOLS"]` in a gateway.json serves it the way `adk-mcp-gateway
serve CONFIG` does (through the hub). The URLs come from the environment, set by the test that writes the config:
`DOCS_MCP_URL`, `OAUTH_AUTHORIZE_URL`, `OAUTH_TOKEN_URL`, `OAUTH_CLIENT_ID`, `OAUTH_CLIENT_SECRET`.
"""

from __future__ import annotations

import os

from gateway.client import McpToolset, StreamableHTTPConnectionParams
from gateway.tools import (
    AuthCredential,
    AuthCredentialTypes,
    OAuth2,
    OAuth2Auth,
    OAuthFlowAuthorizationCode,
    OAuthFlows,
)


def docs_toolset(
    url: str, authorize_url: str, token_url: str, client_id: str, client_secret: str, *, connect_timeout: float = 30
) -> McpToolset:
    """The docs server (prefix `docs`), each user signing in with their own account (scope `docs.read`)."""
    flow = OAuthFlowAuthorizationCode(
        authorizationUrl=authorize_url, tokenUrl=token_url, scopes={"docs.read": "Read your documents"}
    )
    return McpToolset(
        connection_params=StreamableHTTPConnectionParams(url=url, connect_timeout=connect_timeout),
        auth_scheme=OAuth2(flows=OAuthFlows(authorizationCode=flow)),
        auth_credential=AuthCredential(
            auth_type=AuthCredentialTypes.OAUTH2, oauth2=OAuth2Auth(client_id=client_id, client_secret=client_secret)
        ),
        credential_key="docs",
        tool_name_prefix="docs",
    )


def _from_environment() -> list[McpToolset]:
    if "DOCS_MCP_URL" not in os.environ:
        return []
    return [
        docs_toolset(
            os.environ["DOCS_MCP_URL"],
            os.environ["OAUTH_AUTHORIZE_URL"],
            os.environ["OAUTH_TOKEN_URL"],
            os.environ["OAUTH_CLIENT_ID"],
            os.environ["OAUTH_CLIENT_SECRET"],
        )
    ]


TOOLS = _from_environment()
