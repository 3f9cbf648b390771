"""`ClientCredentials`: the gateway's own token from the OAuth client credentials grant, renewed as it expires."""

from __future__ import annotations

import logging

import anyio

from gateway.client.credentials.credential import SharedTokenCredential
from gateway.errors import ConfigError
from gateway.oauth import ClientAuthMethod, IssuedToken, TokenEndpoint, discover_token_endpoint

__all__ = ["ClientCredentials"]

logger = logging.getLogger(__name__)


class ClientCredentials(SharedTokenCredential):
    """A token for the gateway itself (RFC 6749 §4.4), fetched on first use and again shortly before it expires,
    or when the upstream refuses it.

    Args:
        client_id: the gateway's client id at the authorization server.
        client_secret: its secret.
        token_url: the token endpoint; or give `issuer` and it is read from the issuer's metadata.
        issuer: the authorization server's issuer URL (RFC 8414 discovery).
        scope: space-separated scopes to ask for.
        resource: the upstream's resource indicator (RFC 8707), when the server wants one.
        audience: the audience to ask for, for servers that use that instead of `resource`.
        auth_method: how the client authenticates at the token endpoint.
    """

    def __init__(
        self,
        *,
        client_id: str,
        client_secret: str,
        token_url: str | None = None,
        issuer: str | None = None,
        scope: str | None = None,
        resource: str | None = None,
        audience: str | None = None,
        auth_method: ClientAuthMethod = "client_secret_basic",
    ) -> None:
        if (token_url is None) == (issuer is None):
            raise ConfigError("Client credentials need either 'tokenUrl' or 'issuer' (to discover the token URL).")
        super().__init__()
        self._client_id = client_id
        self._client_secret = client_secret
        self._token_url = token_url
        self._issuer = issuer
        self._scope = scope
        self._resource = resource
        self._audience = audience
        self._auth_method: ClientAuthMethod = auth_method
        self._endpoint: TokenEndpoint | None = None
        self._issued: IssuedToken | None = None
        self._lock = anyio.Lock()

    def describe(self) -> str:
        return f"OAuth client credentials (client {self._client_id!r} at {self._token_url or self._issuer})"

    async def _token_endpoint(self) -> TokenEndpoint:
        if self._endpoint is None:
            url = self._token_url or await discover_token_endpoint(str(self._issuer))
            self._endpoint = TokenEndpoint(url, self._client_id, self._client_secret, self._auth_method)
        return self._endpoint

    async def token(self, *, rejected: str | None = None) -> str | None:
        """The current token, fetched anew when it is about to expire or was just refused.

        Raises:
            CredentialError: the token endpoint refused or cannot be reached.
        """
        async with self._lock:
            issued = self._issued
            if issued is not None and issued.fresh() and issued.access_token != rejected:
                return issued.access_token
            endpoint = await self._token_endpoint()
            self._issued = await endpoint.client_credentials(
                scope=self._scope, resource=self._resource, audience=self._audience
            )
            logger.info("Fetched a client-credentials token for %s from %s.", self._client_id, endpoint.url)
            return self._issued.access_token
