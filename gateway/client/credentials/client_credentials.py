"""`ClientCredentials`: the gateway's own token from the OAuth client credentials grant, renewed as it expires."""

from __future__ import annotations

import logging

import anyio

from gateway.client.credentials.credential import SharedTokenCredential
from gateway.oauth import ClientAuthMethod, ConfiguredEndpoint, IssuedToken

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
        super().__init__()
        self._where = ConfiguredEndpoint(
            client_id, client_secret, auth_method, token_url=token_url, issuer=issuer, needs="Client credentials need"
        )
        self._asked = {"scope": scope, "resource": resource, "audience": audience}
        self._issued: IssuedToken | None = None
        self._lock = anyio.Lock()

    def describe(self) -> str:
        return f"OAuth client credentials (client {self._where.client_id!r} at {self._where.location})"

    async def token(self, *, rejected: str | None = None) -> str | None:
        """The current token, fetched anew when it is about to expire or was just refused.

        Raises:
            CredentialError: the token endpoint refused or cannot be reached.
        """
        async with self._lock:
            issued = self._issued
            if issued is not None and issued.fresh() and issued.access_token != rejected:
                return issued.access_token
            endpoint = await self._where.endpoint()
            self._issued = await endpoint.client_credentials(**self._asked)
            logger.info("Fetched a client-credentials token for %s from %s.", self._where.client_id, endpoint.url)
            return self._issued.access_token
