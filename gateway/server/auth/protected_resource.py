"""The gateway as a protected resource: its RFC 9728 metadata, and the challenge a request without access gets.

- `GET /.well-known/oauth-protected-resource{path}` (and the root form) names the resource, its authorization
  server and its scopes, so an MCP client can discover where to get a token.
- A request without a token gets 401 with `WWW-Authenticate: Bearer resource_metadata="…"`; one with a token that
  is not valid here adds `error="invalid_token"` (RFC 6750 §3.1); a valid token lacking a required scope gets
  403 with `error="insufficient_scope"` and the scopes needed (`scope="…"`), so the client can step up.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlparse

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, request_response
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.server.auth.oauth_settings import OAuthSettings

__all__ = ["BearerGuard", "resource_metadata", "resource_metadata_routes"]


def resource_metadata(settings: OAuthSettings, resource_name: str) -> dict[str, Any]:
    """The RFC 9728 protected resource metadata document."""
    document: dict[str, Any] = {
        "resource": settings.resource,
        "authorization_servers": [settings.issuer],
        "bearer_methods_supported": ["header"],
        "resource_name": resource_name,
    }
    if settings.advertised_scopes:
        document["scopes_supported"] = list(settings.advertised_scopes)
    return document


def resource_metadata_routes(settings: OAuthSettings, resource_name: str) -> list[Route]:
    """Routes serving the metadata at the path-suffixed well-known URL and at the root one."""
    document = resource_metadata(settings, resource_name)

    async def metadata(_request: Request) -> Response:
        return JSONResponse(document, headers={"Cache-Control": "public, max-age=3600"})

    # Browser-based clients (the MCP Inspector) read it cross-origin, sending MCP-Protocol-Version.
    endpoint = CORSMiddleware(
        app=request_response(metadata), allow_origins="*", allow_methods=["GET", "OPTIONS"], allow_headers=["*"]
    )
    paths = {urlparse(settings.resource_metadata_url).path, "/.well-known/oauth-protected-resource"}
    return [Route(path, endpoint, methods=["GET", "OPTIONS"]) for path in sorted(paths)]


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class BearerGuard:
    """ASGI middleware: only authenticated requests with every required scope reach `app`."""

    def __init__(
        self, app: ASGIApp, *, required_scopes: Sequence[str] = (), resource_metadata_url: str | None = None
    ) -> None:
        self.app = app
        self.required_scopes = tuple(required_scopes)
        self.resource_metadata_url = resource_metadata_url

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        user = scope.get("user")
        if not isinstance(user, AuthenticatedUser):
            presented = any(
                name == b"authorization" and value[:7].lower() == b"bearer " for name, value in scope["headers"]
            )
            if presented:
                await self._refuse(send, 401, "invalid_token", "The access token is not valid for this resource.")
            else:
                await self._refuse(send, 401, None, "This resource needs a bearer access token.")
            return
        missing = [s for s in self.required_scopes if s not in user.scopes]
        if missing:
            await self._refuse(send, 403, "insufficient_scope", f"The access token lacks scope {' '.join(missing)}.")
            return
        await self.app(scope, receive, send)

    async def _refuse(self, send: Send, status: int, error: str | None, description: str) -> None:
        params: list[str] = []
        if error is not None:
            params += [f"error={_quoted(error)}", f"error_description={_quoted(description)}"]
        if error == "insufficient_scope" or (status == 401 and self.required_scopes):
            params.append(f"scope={_quoted(' '.join(self.required_scopes))}")
        if self.resource_metadata_url is not None:
            params.append(f"resource_metadata={_quoted(self.resource_metadata_url)}")
        challenge = "Bearer" + (" " + ", ".join(params) if params else "")
        body = json.dumps({"error": error or "unauthorized", "error_description": description}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", challenge.encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
