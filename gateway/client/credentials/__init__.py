"""Outbound credentials: how the gateway authenticates to an upstream MCP server.

One `Credential` per upstream, shared by the gateway config (`"auth"` of a server entry) and `McpToolset`
(`credential=`, or ADK's `auth_scheme`/`auth_credential`): static headers, OAuth client credentials, a stored user
login (authorization code + PKCE, done once by `adk-mcp-gateway login`), a sign-in on first contact wherever the
upstream's authorization server leads (`AuthorizationCodeSignIn`, `MachineSignIn`, and `AssertionSignIn` for an
enterprise identity provider's or a workload's JWT), RFC 8693 token exchange on behalf of the downstream
principal, or — only where asked for — the downstream principal's own token passed through.
Tokens are renewed as they expire; a 401 gets one renewal and one more try. No secret is ever logged.
"""

from gateway.client.credentials.assertion_grant import Assertion, AssertionSignIn, id_jag_from
from gateway.client.credentials.authorization_code import AuthorizationCodeSignIn, Authorize, MemoryTokenStorage
from gateway.client.credentials.client_credentials import ClientCredentials
from gateway.client.credentials.credential import (
    BearerAuth,
    Credential,
    HeaderCredential,
    SharedTokenCredential,
    SubjectToken,
    TokenSource,
)
from gateway.client.credentials.login import LoginResult, log_in
from gateway.client.credentials.machine_sign_in import MachineSignIn
from gateway.client.credentials.on_behalf import PassThrough, TokenExchange
from gateway.client.credentials.stored_login import StoredLogin
from gateway.client.credentials.token_file import TOKEN_DIR_ENV, LoginRecord, TokenFile, token_dir
from gateway.oauth import IssuedToken, TokenEndpoint, discover_token_endpoint

__all__ = [
    "TOKEN_DIR_ENV",
    "Assertion",
    "AssertionSignIn",
    "AuthorizationCodeSignIn",
    "Authorize",
    "BearerAuth",
    "ClientCredentials",
    "Credential",
    "HeaderCredential",
    "IssuedToken",
    "LoginRecord",
    "LoginResult",
    "MachineSignIn",
    "MemoryTokenStorage",
    "PassThrough",
    "SharedTokenCredential",
    "StoredLogin",
    "SubjectToken",
    "TokenEndpoint",
    "TokenExchange",
    "TokenFile",
    "TokenSource",
    "discover_token_endpoint",
    "id_jag_from",
    "log_in",
    "token_dir",
]
