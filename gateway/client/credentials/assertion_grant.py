"""`AssertionSignIn`: the gateway's token for a JWT that vouches for it (RFC 7523 JWT bearer grant), at the
authorization server the upstream names.

Two extensions of MCP authorization sign in this way. Enterprise-managed authorization (SEP-990): the enterprise's
identity provider exchanges the user's ID token for an identity assertion grant, an ID-JAG (RFC 8693, `id_jag_from`),
which the upstream's authorization server takes for a token. Workload identity federation (SEP-1933): the platform
the gateway runs on issues it a JWT, which the authorization server takes directly.

The upstream's protected resource metadata (RFC 9728) names its resource identifier and authorization server; that
server's metadata (RFC 8414) its token endpoint. The assertion is asked for with that server's issuer as audience and
the upstream's resource, fetched anew for each token. Giving `issuer` pins the authorization server: the
credential refuses an upstream that names another, so the assertion never reaches it. A refused grant is an error,
never retried with another grant.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Final

import anyio

from gateway._http_clients import http_client
from gateway.client.credentials.credential import SharedTokenCredential
from gateway.errors import CredentialError
from gateway.oauth import ClientAuthMethod, IssuedToken, MetadataError, TokenEndpoint
from gateway.oauth.discovery import issuer_metadata, protected_resource

__all__ = ["ID_JAG_TOKEN_TYPE", "ID_TOKEN_TYPE", "Assertion", "AssertionSignIn", "id_jag_from"]

logger = logging.getLogger(__name__)

ID_TOKEN_TYPE: Final = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG_TOKEN_TYPE: Final = "urn:ietf:params:oauth:token-type:id-jag"
_TIMEOUT: Final = 30.0

Assertion = Callable[[str, str], Awaitable[str]]
"""A JWT for the authorization server `audience` (its issuer) and the upstream `resource`: `(audience, resource)`."""


def id_jag_from(token_url: str, id_token: str, *, client_id: str, client_secret: str | None = None) -> Assertion:
    """The ID-JAGs an enterprise identity provider issues for a user's ID token (SEP-990, RFC 8693).

    Args:
        token_url: the identity provider's token endpoint.
        id_token: the user's ID token from the identity provider.
        client_id: the gateway's client id at the identity provider.
        client_secret: its secret there, if it has one (sent as `client_secret_post`).
    """
    provider = TokenEndpoint(token_url, client_id, client_secret, "client_secret_post" if client_secret else "none")

    async def exchange(audience: str, resource: str) -> str:
        issued = await provider.exchange(
            id_token,
            audience=audience,
            resource=resource,
            subject_token_type=ID_TOKEN_TYPE,
            requested_token_type=ID_JAG_TOKEN_TYPE,
        )
        return issued.access_token

    return exchange


class AssertionSignIn(SharedTokenCredential):
    """A token for an assertion, from the authorization server the upstream names (see the module docstring).

    Args:
        server_url: the upstream's MCP endpoint (the protected resource).
        assertion: gives the JWT for an authorization server and resource (see `Assertion`).
        client_id: the gateway's client id at the authorization server (None: the assertion alone identifies it).
        client_secret: its secret, for a confidential client.
        auth_method: how a client with a secret authenticates at the token endpoint.
        scope: space-separated scopes to ask for.
        issuer: the authorization server the gateway trusts with its assertions.
    """

    def __init__(
        self,
        server_url: str,
        assertion: Assertion,
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
        auth_method: ClientAuthMethod = "client_secret_basic",
        scope: str | None = None,
        issuer: str | None = None,
    ) -> None:
        super().__init__()
        self._server_url = server_url
        self._assertion = assertion
        self._client = (client_id, client_secret, auth_method if client_secret else "none")
        self._scope = scope
        self._issuer = issuer
        self._found: tuple[TokenEndpoint, str, str] | None = None
        self._issued: IssuedToken | None = None
        self._lock = anyio.Lock()

    def describe(self) -> str:
        return f"an assertion grant (RFC 7523) for {self._server_url}"

    async def token(self, *, rejected: str | None = None) -> str | None:
        """The current token, fetched for a fresh assertion when it is about to expire or was just refused.

        Raises:
            CredentialError: the upstream's or its authorization server's metadata cannot be read, names an
                untrusted server, or the assertion or the grant was refused.
        """
        async with self._lock:
            issued = self._issued
            if issued is not None and issued.fresh() and issued.access_token != rejected:
                return issued.access_token
            endpoint, issuer, resource = await self._endpoint()
            assertion = await self._assertion(issuer, resource)
            self._issued = await endpoint.jwt_bearer(assertion, scope=self._scope, resource=resource)
            logger.info("Fetched a token for an assertion from %s.", endpoint.url)
            return self._issued.access_token

    async def _endpoint(self) -> tuple[TokenEndpoint, str, str]:
        """The token endpoint, the authorization server's issuer and the upstream's resource (found once)."""
        if self._found is None:
            async with http_client(headers=None, connect_timeout=_TIMEOUT, read_timeout=_TIMEOUT) as http:
                try:
                    resource_metadata = await protected_resource(http, self._server_url)
                    servers: list[str] = resource_metadata["authorization_servers"]
                    issuer = self._issuer or servers[0]
                    if issuer.rstrip("/") not in (server.rstrip("/") for server in servers):
                        raise CredentialError(
                            f"{self._server_url} names the authorization servers {servers}, not {issuer}; the "
                            "assertion is not sent there."
                        )
                    metadata = await issuer_metadata(http, issuer, required=("token_endpoint",))
                except MetadataError as exc:
                    raise CredentialError(f"Cannot find where to sign in to {self._server_url}: {exc}") from exc
            resource = resource_metadata.get("resource")
            self._found = (
                TokenEndpoint(metadata["token_endpoint"], *self._client),
                metadata["issuer"],
                resource if isinstance(resource, str) else self._server_url,
            )
        return self._found
