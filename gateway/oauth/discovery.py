"""Where an issuer publishes its metadata (RFC 8414 §3.1, OpenID Connect Discovery §4), reading it, and the token
endpoint it names.

`issuer_metadata` walks an issuer's discovery URLs and checks the document names that issuer (RFC 8414 §3.3): the
server's trusted authorization server and a client's token endpoint by issuer both read it there.
`provider_configuration` reads one OpenID Connect discovery document named by its URL (a served tool's sign-in).
`protected_resource` reads what an MCP server says about itself as a protected resource (RFC 9728): its resource
identifier and its authorization servers.
`ConfiguredEndpoint` is a client's token endpoint as a config names it: by URL, or by issuer (discovered on first
use and kept).
"""

from __future__ import annotations

from typing import Any, Final, Literal, cast
from urllib.parse import urlparse

import httpx2

from gateway._http_clients import REQUEST_FAILED, http_client
from gateway.errors import ConfigError, CredentialError
from gateway.oauth.client_authentication import ClientAuthMethod
from gateway.oauth.token_endpoint import TokenEndpoint

__all__ = [
    "ConfiguredEndpoint",
    "MetadataError",
    "MetadataProblem",
    "discover_token_endpoint",
    "discovery_urls",
    "fetch_json",
    "issuer_metadata",
    "protected_resource",
    "provider_configuration",
]

_TIMEOUT: Final = 30.0
_OK: Final = 200

MetadataProblem = Literal["unreachable", "other issuer", "absent"]


class MetadataError(Exception):
    """An issuer's or a provider's metadata cannot be read; the message names the URL, `problem` says which way.

    `problem` is "unreachable" (the request failed), "other issuer" (the document names another issuer) or
    "absent" (no usable document there). Each caller turns it into its own error (`CredentialError`,
    `AuthorizationServerError`, ...) with what to do, which depends on where the URL came from.
    """

    def __init__(self, message: str, problem: MetadataProblem) -> None:
        super().__init__(message)
        self.problem: MetadataProblem = problem


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


async def fetch_json(http: httpx2.AsyncClient, url: str) -> tuple[int, dict[str, Any] | None]:
    """GET `url` asking for JSON: the status, and the body when it is 200 and a JSON object (else None).

    Raises:
        MetadataError: the request failed ("unreachable").
    """
    try:
        response = await http.get(url, headers={"Accept": "application/json"})
    except REQUEST_FAILED as exc:
        raise MetadataError(f"{url} cannot be reached ({type(exc).__name__}: {exc}).", "unreachable") from exc
    if response.status_code != _OK:
        return response.status_code, None
    try:
        document = response.json()
    except ValueError:
        return response.status_code, None
    return response.status_code, cast("dict[str, Any]", document) if isinstance(document, dict) else None


async def issuer_metadata(http: httpx2.AsyncClient, issuer: str, required: tuple[str, ...] = ()) -> dict[str, Any]:
    """The metadata `issuer` publishes at the first of its discovery URLs that has it, naming that issuer.

    A document without a string `issuer` or one of the `required` fields is passed over for the next URL.

    Raises:
        MetadataError: a URL cannot be reached, the document names another issuer, or no URL has one.
    """
    base = issuer.rstrip("/")
    tried: list[str] = []
    for url in discovery_urls(base):
        status, document = await fetch_json(http, url)
        if document is None or not all(isinstance(document.get(name), str) for name in ("issuer", *required)):
            tried.append(f"{url} → {status}")
            continue
        if document["issuer"].rstrip("/") != base:
            raise MetadataError(
                f"The metadata at {url} names the issuer {document['issuer']!r}, not {issuer!r} (RFC 8414 §3.3).",
                "other issuer",
            )
        return document
    raise MetadataError(f"The authorization server {issuer} publishes no metadata ({'; '.join(tried)}).", "absent")


async def provider_configuration(url: str) -> dict[str, Any]:
    """The OpenID Connect discovery document at `url` (a provider named by its discovery URL, not its issuer).

    Raises:
        MetadataError: the URL cannot be reached, or answers no JSON document ("absent"; the message has the status).
    """
    async with http_client(headers=None, connect_timeout=_TIMEOUT, read_timeout=_TIMEOUT) as http:
        status, document = await fetch_json(http, url)
    if document is None:
        raise MetadataError(f"{url} answered {status}, not the discovery document.", "absent")
    return document


async def protected_resource(http: httpx2.AsyncClient, resource_url: str) -> dict[str, Any]:
    """The protected resource metadata of `resource_url` (RFC 9728 §3.1: the path-aware well-known URL, then the
    origin's), with at least one authorization server.

    Raises:
        MetadataError: a URL cannot be reached, or none has a document naming an authorization server ("absent").
    """
    parsed = urlparse(resource_url)
    origin = f"{parsed.scheme}://{parsed.netloc}"
    path = parsed.path.rstrip("/")
    urls = [f"{origin}/.well-known/oauth-protected-resource{path}"]
    if path:
        urls.append(f"{origin}/.well-known/oauth-protected-resource")
    tried: list[str] = []
    for url in urls:
        status, document = await fetch_json(http, url)
        servers = document.get("authorization_servers") if document is not None else None
        if document is not None and isinstance(servers, list) and servers and isinstance(servers[0], str):
            return document
        tried.append(f"{url} → {status}")
    raise MetadataError(f"{resource_url} names no authorization server ({'; '.join(tried)}).", "absent")


_TOKEN_ENDPOINT_HINTS: Final[dict[MetadataProblem, str]] = {
    "unreachable": "Check the issuer URL and that the server is running.",
    "other issuer": "Set 'issuer' to the authorization server's exact issuer URL.",
    "absent": "Set 'tokenUrl' instead of 'issuer'.",
}


async def discover_token_endpoint(issuer: str) -> str:
    """The token endpoint an issuer publishes (RFC 8414 metadata, then OpenID Connect discovery).

    Raises:
        CredentialError: neither document is there, or it names another issuer.
    """
    async with http_client(headers=None, connect_timeout=_TIMEOUT, read_timeout=_TIMEOUT) as http:
        try:
            metadata = await issuer_metadata(http, issuer, required=("token_endpoint",))
        except MetadataError as exc:
            raise CredentialError(f"{exc} {_TOKEN_ENDPOINT_HINTS[exc.problem]}") from exc
    return metadata["token_endpoint"]


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
