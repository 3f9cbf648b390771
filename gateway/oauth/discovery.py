"""Where an issuer publishes its metadata (RFC 8414 §3.1, OpenID Connect Discovery §4), and its token endpoint.

`ConfiguredEndpoint` is a client's token endpoint as a config names it: by URL, or by issuer (discovered on first
use and kept).
"""

from __future__ import annotations

from typing import Final
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, ValidationError

from gateway._http_clients import REQUEST_FAILED, http_client
from gateway.errors import ConfigError, CredentialError
from gateway.oauth.client_authentication import ClientAuthMethod
from gateway.oauth.token_endpoint import TokenEndpoint

__all__ = ["ConfiguredEndpoint", "discover_token_endpoint", "discovery_urls"]

_TIMEOUT: Final = 30.0
_OK: Final = 200


def discovery_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be, in the order tried: RFC 8414 path-aware, OIDC path-aware, OIDC appended."""
    parsed = urlparse(issuer)
    origin = f"{parsed.scheme}://{parsed.netloc}"
    path = parsed.path.rstrip("/")
    urls = [
        f"{origin}/.well-known/oauth-authorization-server{path}",
        f"{origin}/.well-known/openid-configuration{path}",
    ]
    if path:
        urls.append(f"{origin}{path}/.well-known/openid-configuration")
    return urls


class _ServerMetadata(BaseModel):
    model_config = ConfigDict(extra="ignore")

    issuer: str
    token_endpoint: str


async def discover_token_endpoint(issuer: str) -> str:
    """The token endpoint an issuer publishes (RFC 8414 metadata, then OpenID Connect discovery).

    Raises:
        CredentialError: neither document is there, or it names another issuer.
    """
    base = issuer.rstrip("/")
    candidates = discovery_urls(base)
    async with http_client(headers=None, connect_timeout=_TIMEOUT, read_timeout=_TIMEOUT) as http:
        for url in candidates:
            try:
                response = await http.get(url, headers={"Accept": "application/json"})
            except REQUEST_FAILED as exc:
                raise CredentialError(
                    f"The authorization server {issuer} cannot be reached ({type(exc).__name__}: {exc}). "
                    "Check the issuer URL and that the server is running."
                ) from exc
            if response.status_code != _OK:
                continue
            try:
                metadata = _ServerMetadata.model_validate_json(response.content)
            except ValidationError:
                continue
            if metadata.issuer.rstrip("/") != base:
                raise CredentialError(
                    f"The metadata at {url} names the issuer {metadata.issuer!r}, not {issuer!r}; "
                    "set 'issuer' to the authorization server's exact issuer URL."
                )
            return metadata.token_endpoint
    raise CredentialError(
        f"The authorization server {issuer} publishes no metadata (tried {', '.join(candidates)}); "
        "set 'tokenUrl' instead of 'issuer'."
    )


class ConfiguredEndpoint:
    """A client at a token endpoint named by its URL or by its issuer; the issuer's metadata is read on first use.

    Args:
        client_id: the client's id at the authorization server.
        client_secret: its secret (None or empty: none is sent).
        auth_method: how the client authenticates at the token endpoint.
        token_url: the token endpoint; or give `issuer`.
        issuer: the authorization server's issuer URL.
        needs: who needs one of the two, for the message (e.g. "Token exchange needs").

    Raises:
        ConfigError: both or neither of `token_url` and `issuer` were given.
    """

    def __init__(
        self,
        client_id: str,
        client_secret: str | None,
        auth_method: ClientAuthMethod,
        *,
        token_url: str | None,
        issuer: str | None,
        needs: str,
    ) -> None:
        if (token_url is None) == (issuer is None):
            raise ConfigError(f"{needs} either 'tokenUrl' or 'issuer' (to discover the token URL).")
        self.client_id = client_id
        self._client = (client_id, client_secret, auth_method)
        self.location = str(token_url or issuer)
        """The token URL, or the issuer's (for messages)."""
        self._token_url = token_url
        self._endpoint: TokenEndpoint | None = None

    async def endpoint(self) -> TokenEndpoint:
        """The token endpoint (discovered from the issuer the first time).

        Raises:
            CredentialError: the issuer's metadata cannot be read, or names another issuer.
        """
        if self._endpoint is None:
            url = self._token_url or await discover_token_endpoint(self.location)
            self._endpoint = TokenEndpoint(url, *self._client)
        return self._endpoint
