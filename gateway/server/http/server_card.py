"""The HTTP front's MCP Server Card (SEP-2127): who the server is and how to connect, before connecting.

`GET /mcp/server-card` (`<streamable-http-url>/server-card`, the location the extension reserves) answers the
card as `application/mcp-server-card+json`; `GET /.well-known/mcp/server-card`, where earlier drafts put it,
answers the same. The card names the server, its version, its two transports (streamable HTTP and SSE, with the
protocol versions each speaks) and, when the server asks for tokens, that it does: an `Authorization` header on
each remote, and under `_meta["adk-mcp-gateway/auth"]` the schemes, and with OAuth the protected resource
metadata URL, the authorization servers and the scopes. It lists no tools and no upstreams (a card is public).

The card is public like the RFC 9728 metadata (no token, any origin may read it), but its URLs come from the
request's Host, so a Host that DNS-rebinding protection refuses gets no card. Each answer carries a strong ETag
of its bytes; a request naming it in `If-None-Match` gets 304.
"""

from __future__ import annotations

import hashlib
import json
import re
from importlib.metadata import PackageNotFoundError, version
from ipaddress import ip_address
from typing import Any, Final

from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route, request_response

from adapters.meta_keys import SERVER_CARD_AUTH_META_KEY
from gateway.server.auth.oauth_settings import OAuthSettings
from gateway.server.http.host_check import HostCheck

__all__ = ["SERVER_CARD_PATHS", "SERVER_CARD_TYPE", "ServerCard", "server_card_routes"]

SERVER_CARD_TYPE: Final = "application/mcp-server-card+json"
SCHEMA_URL: Final = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"
SERVER_CARD_PATHS: Final = ("/mcp/server-card", "/.well-known/mcp/server-card")
_CACHE_CONTROL: Final = "public, max-age=3600"
_UNNAMEABLE: Final = re.compile(r"[^a-zA-Z0-9._-]+")
_DESCRIPTION: Final = "MCP tools served by adk-mcp-gateway."


def _package_version() -> str:
    try:
        return version("adk-mcp-gateway")
    except PackageNotFoundError:
        return "0.0.0"


def _namespace(host: str) -> str:
    """The card name's reverse-DNS namespace: the host name reversed, `localhost` for a loopback or IP address."""
    name = host.strip("[]").lower()
    try:
        ip_address(name)
    except ValueError:
        labels = [label for label in _UNNAMEABLE.sub("-", name).split(".") if label]
        return ".".join(reversed(labels)) or "localhost"
    return "localhost"


class ServerCard:
    """Builds one server's card for a request (its URLs are the request's, or the OAuth resource's).

    Args:
        name: the server's name (the card's title; its name's second part, made safe).
        server_version: the server's version (default: this package's).
        description: what the server offers, at most 100 characters.
        token_required: every MCP request needs a bearer token.
        oauth: the server is an OAuth resource server of these settings.
    """

    def __init__(
        self,
        name: str,
        *,
        server_version: str = "",
        description: str | None = None,
        token_required: bool = False,
        oauth: OAuthSettings | None = None,
    ) -> None:
        self.name = name
        self.version = server_version or _package_version()
        self.description = (description or _DESCRIPTION)[:100]
        self.oauth = oauth
        self.token_required = token_required or oauth is not None

    def _base_url(self, request: Request) -> str:
        resource = self.oauth.resource.rstrip("/") if self.oauth is not None else ""
        if resource.endswith("/mcp"):
            return resource[: -len("/mcp")]
        return str(request.base_url).rstrip("/")

    def card(self, request: Request) -> dict[str, Any]:
        """The card as a JSON object, for `request`."""
        base = self._base_url(request)
        server_name = _UNNAMEABLE.sub("-", self.name).strip("-") or "adk-mcp-gateway"
        versions = [*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS]
        remotes: list[dict[str, Any]] = [
            {"type": "streamable-http", "url": f"{base}/mcp", "supportedProtocolVersions": versions},
            {"type": "sse", "url": f"{base}/sse", "supportedProtocolVersions": versions},
        ]
        card: dict[str, Any] = {
            "$schema": SCHEMA_URL,
            "name": f"{_namespace(request.url.hostname or '')}/{server_name}"[:200],
            "version": self.version[:255],
            "description": self.description,
            "title": self.name[:100] or server_name,
            "remotes": remotes,
        }
        if self.token_required:
            header = {
                "name": "Authorization",
                "description": "Bearer access token: `Bearer <token>`.",
                "isRequired": True,
                "isSecret": True,
            }
            for remote in remotes:
                remote["headers"] = [header]
            card["_meta"] = {SERVER_CARD_AUTH_META_KEY: self._auth()}
        return card

    def _auth(self) -> dict[str, Any]:
        if self.oauth is None:
            return {"required": True, "schemes": ["bearer"]}
        auth: dict[str, Any] = {
            "required": True,
            "schemes": ["bearer", "oauth2"],
            "protectedResourceMetadata": self.oauth.resource_metadata_url,
            "authorizationServers": [self.oauth.issuer],
        }
        if self.oauth.advertised_scopes:
            auth["scopes"] = list(self.oauth.advertised_scopes)
        return auth

    async def endpoint(self, request: Request) -> Response:
        """`GET`: the card, or 304 when `If-None-Match` names its ETag."""
        body = json.dumps(self.card(request), separators=(",", ":"), sort_keys=True).encode()
        etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        headers = {"ETag": etag, "Cache-Control": _CACHE_CONTROL}
        if _matches(request.headers.get("if-none-match"), etag):
            return Response(status_code=304, headers=headers)
        return Response(body, media_type=SERVER_CARD_TYPE, headers=headers)


def _matches(if_none_match: str | None, etag: str) -> bool:
    """Whether an `If-None-Match` header names `etag` (weakly, as RFC 9110 §13.1.2 compares for GET), or is `*`."""
    if if_none_match is None:
        return False
    tags = [tag.strip() for tag in if_none_match.split(",")]
    return "*" in tags or any(tag.removeprefix("W/") == etag for tag in tags)


def server_card_routes(card: ServerCard, host_check: HostCheck) -> list[Route]:
    """The card's routes: any origin may read it (CORS), a refused Host gets the host check's refusal."""

    async def endpoint(request: Request) -> Response:
        # Only the Host matters here: the card is readable from any origin, as RFC 9728 metadata is.
        scope = {**request.scope, "headers": [(k, v) for k, v in request.scope["headers"] if k != b"origin"]}
        refusal = await host_check.validate_request(Request(scope), is_post=False)
        if refusal is not None:
            return refusal
        return await card.endpoint(request)

    app = CORSMiddleware(
        app=request_response(endpoint),
        allow_origins="*",
        allow_methods=["GET", "OPTIONS"],
        allow_headers=["Content-Type"],
        expose_headers=["ETag"],
    )
    return [Route(path, app, methods=["GET", "OPTIONS"]) for path in SERVER_CARD_PATHS]
