"""`MachineSignIn`: the gateway's own token from the client credentials grant, at the authorization server the
upstream names (the MCP client-credentials extension).

Unlike `ClientCredentials`, which is told its token endpoint, this credential finds it as a user sign-in does: the
upstream's 401 leads to its protected resource metadata, that to the authorization server's metadata and token
endpoint (through the MCP SDK's client-credentials providers). The client authenticates with its secret
(`client_secret_basic` or `client_secret_post`) or with a JWT signed by its private key (`private_key_jwt`,
RFC 7523). Giving `issuer` pins the authorization server the client belongs to: the flow stops if the upstream
leads anywhere else, so the secret or assertion never reaches another server.
"""

from __future__ import annotations

from typing import Literal

import httpx2
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)

from gateway.client.credentials.authorization_code import MemoryTokenStorage
from gateway.client.credentials.credential import Credential
from gateway.errors import CredentialError
from gateway.tools import ReadonlyContext

__all__ = ["MachineSignIn"]


class MachineSignIn(Credential):
    """A client-credentials token for the gateway itself, from the authorization server the upstream names.

    Args:
        server_url: the upstream's MCP endpoint (the protected resource).
        client_id: the gateway's client id at the authorization server.
        client_secret: its secret; or give `private_key_pem`.
        private_key_pem: the private key (PEM) that signs the client's assertions (`private_key_jwt`).
        signing_algorithm: the JWS algorithm of the assertions (e.g. `ES256`, `RS256`).
        auth_method: how a client with a secret authenticates at the token endpoint.
        scope: space-separated scopes to ask for.
        issuer: the authorization server the client is registered with (see the module docstring).
        storage: where the token is kept (default: in memory).

    Raises:
        CredentialError: both or neither of `client_secret` and `private_key_pem` were given.
    """

    def __init__(
        self,
        server_url: str,
        client_id: str,
        *,
        client_secret: str | None = None,
        private_key_pem: str | None = None,
        signing_algorithm: str = "ES256",
        auth_method: Literal["client_secret_basic", "client_secret_post"] = "client_secret_basic",
        scope: str | None = None,
        issuer: str | None = None,
        storage: TokenStorage | None = None,
    ) -> None:
        if (client_secret is None) == (private_key_pem is None):
            raise CredentialError("Client credentials need either a client secret or a private key, not both.")
        kept = storage or MemoryTokenStorage()
        self._server_url = server_url
        self._client_id = client_id
        self._provider: OAuthClientProvider
        if private_key_pem is not None:
            self._how = "private_key_jwt"
            signing = SignedJWTParameters(
                issuer=client_id, subject=client_id, signing_key=private_key_pem, signing_algorithm=signing_algorithm
            )
            self._provider = PrivateKeyJWTOAuthProvider(
                server_url,
                kept,
                client_id,
                signing.create_assertion_provider(),
                scope=scope,
                issuer=issuer,
            )
        else:
            assert client_secret is not None
            self._how = auth_method
            self._provider = ClientCredentialsOAuthProvider(
                server_url,
                kept,
                client_id,
                client_secret,
                token_endpoint_auth_method=auth_method,
                scope=scope,
                issuer=issuer,
            )

    def auth(self, context: ReadonlyContext | None) -> httpx2.Auth:
        del context
        return self._provider

    def describe(self) -> str:
        return f"OAuth client credentials ({self._how}, client {self._client_id!r}) for {self._server_url}"
