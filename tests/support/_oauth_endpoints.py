"""The HTTP endpoints of the test authorization server (`tests.support.oauth_provider`), and its records."""

from __future__ import annotations

import base64
import hashlib
import html
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlencode, urlparse

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

if TYPE_CHECKING:
    from tests.support.oauth_provider import OAuthProvider

__all__ = ["ACCESS_TOKEN_TYPE", "TOKEN_EXCHANGE", "Client", "Endpoints", "Grant", "OAuthProviderError"]

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"


class OAuthProviderError(Exception):
    """An OAuth error response (`error`, `error_description`) with its HTTP status."""

    def __init__(self, error: str, description: str, status: int = 400) -> None:
        super().__init__(f"{error}: {description}")
        self.error = error
        self.description = description
        self.status = status


@dataclass
class Client:
    """A registered client (pre-registered with `add_client`, or through dynamic registration)."""

    client_id: str
    client_secret: str | None
    redirect_uris: list[str] = field(default_factory=list[str])
    grant_types: list[str] = field(default_factory=lambda: ["authorization_code", "refresh_token"])
    token_endpoint_auth_method: str = "client_secret_basic"
    scope: str | None = None
    """Default scopes of `client_credentials` tokens when the request names none."""


@dataclass
class Grant:
    """What an authorization code or refresh token stands for."""

    client_id: str
    subject: str
    scopes: list[str]
    resource: str | None
    claims: dict[str, Any]
    redirect_uri: str = ""
    code_challenge: str = ""
    used: bool = False


def b64url_sha256(text: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).decode().rstrip("=")


class Endpoints:
    """Metadata, JWKS, authorize, token, register, introspect and revoke, over one provider's records."""

    def __init__(self, provider: OAuthProvider) -> None:
        self.provider = provider

    def routes(self) -> list[Route]:
        async def metadata(_request: Request) -> Response:
            return JSONResponse(self.provider.metadata())

        async def jwks(_request: Request) -> Response:
            self.provider.jwks_fetches += 1
            await self.provider.jwks_outage_over()
            if self.provider.jwks_outage == "error":
                return JSONResponse({"error": "server_error"}, status_code=500)
            return JSONResponse(self.provider.jwks())

        p = self.provider.path
        return [
            Route(f"/.well-known/oauth-authorization-server{p}", metadata),
            Route(f"/.well-known/openid-configuration{p}", metadata),
            *([Route(f"{p}/.well-known/openid-configuration", metadata)] if p else []),
            Route(f"{p}/jwks", jwks),
            Route(f"{p}/authorize", self._authorize),
            Route(f"{p}/login", self._login),
            Route(f"{p}/token", self._guarded(self._token), methods=["POST"]),
            Route(f"{p}/register", self._guarded(self._register), methods=["POST"]),
            Route(f"{p}/introspect", self._guarded(self._introspect), methods=["POST"]),
            Route(f"{p}/revoke", self._guarded(self._revoke), methods=["POST"]),
        ]

    @staticmethod
    def _guarded(handler: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            try:
                return await handler(request)
            except OAuthProviderError as exc:
                return oauth_error(exc)

        return endpoint

    def _authenticate(self, request: Request, form: Mapping[str, Any]) -> Client:
        """The client a token-endpoint request authenticates as (basic, post, or a public client's id)."""
        header = request.headers.get("authorization", "")
        if header.lower().startswith("basic "):
            decoded = base64.b64decode(header[6:]).decode()
            client_id, _, secret = decoded.partition(":")
            client_id, secret = unquote(client_id), unquote(secret)
        else:
            client_id, secret = str(form.get("client_id", "")), form.get("client_secret")
        client = self.provider.clients.get(client_id)
        if client is None:
            raise OAuthProviderError("invalid_client", f"unknown client {client_id!r}", 401)
        if client.client_secret is not None and not (
            isinstance(secret, str) and secrets.compare_digest(secret, client.client_secret)
        ):
            raise OAuthProviderError("invalid_client", "wrong or missing client secret", 401)
        return client

    async def _login(self, request: Request) -> Response:
        """`GET /login?user=NAME`: this browser is signed in as NAME from now on (a cookie; no password)."""
        user = request.query_params.get("user", "")
        response = HTMLResponse(f"<!doctype html><title>Signed in</title><p id='user'>{html.escape(user)}</p>")
        response.set_cookie(self.provider.login_cookie, user, httponly=True, samesite="lax")
        return response

    async def _authorize(self, request: Request) -> Response:
        q = request.query_params
        client = self.provider.clients.get(q.get("client_id", ""))
        redirect_uri = q.get("redirect_uri", "")
        if client is None or redirect_uri not in client.redirect_uris:
            return JSONResponse(
                {"error": "invalid_request", "error_description": "unknown client or redirect_uri"}, 400
            )
        state = {"state": q["state"]} if "state" in q else {}
        if q.get("response_type") != "code" or q.get("code_challenge_method") != "S256" or not q.get("code_challenge"):
            error = {"error": "invalid_request", "error_description": "response_type=code and PKCE S256 required"}
            return authorization_redirect(redirect_uri, {**error, **state})
        code = secrets.token_urlsafe(24)
        scopes = q.get("scope", "").split()
        self.provider.codes[code] = Grant(
            client.client_id,
            request.cookies.get(self.provider.login_cookie) or self.provider.user,
            scopes,
            q.get("resource"),
            dict(self.provider.user_claims),
            redirect_uri=redirect_uri,
            code_challenge=q["code_challenge"],
        )
        return authorization_redirect(redirect_uri, {"code": code, **state})

    async def _token(self, request: Request) -> Response:
        self.provider.token_requests += 1
        form = dict(await request.form())
        client = self._authenticate(request, form)
        grant_type = form.get("grant_type")
        resource = form.get("resource") or None
        requested = str(form.get("scope", "")).split()
        if grant_type == "client_credentials":
            if client.client_secret is None:
                raise OAuthProviderError("unauthorized_client", "a public client cannot use client_credentials")
            scopes = requested or (client.scope or "").split()
            return JSONResponse(self.provider.issue(client.client_id, client.client_id, scopes, _str(resource), {}))
        if grant_type == "authorization_code":
            grant = self.provider.codes.pop(str(form.get("code", "")), None)
            if grant is None or grant.client_id != client.client_id:
                raise OAuthProviderError("invalid_grant", "unknown, used or foreign authorization code")
            if form.get("redirect_uri") != grant.redirect_uri:
                raise OAuthProviderError("invalid_grant", "redirect_uri differs from the authorization request")
            if not check_pkce(str(form.get("code_verifier", "")), grant.code_challenge):
                raise OAuthProviderError("invalid_grant", "PKCE code_verifier does not match the code_challenge")
            issued_for = _str(resource) or grant.resource
            answer = self.provider.issue(
                client.client_id, grant.subject, grant.scopes, issued_for, grant.claims, refresh=True
            )
            return JSONResponse(answer)
        if grant_type == "refresh_token":
            presented = str(form.get("refresh_token", ""))
            grant = self.provider.refresh_tokens.get(presented)
            if grant is None or grant.used or presented in self.provider.revoked or grant.client_id != client.client_id:
                raise OAuthProviderError("invalid_grant", "unknown, used, revoked or foreign refresh token")
            grant.used = True  # rotation: each refresh token works once
            scopes = requested or grant.scopes
            if not set(scopes) <= set(grant.scopes):
                raise OAuthProviderError("invalid_scope", "a refresh cannot widen the granted scopes")
            issued_for = _str(resource) or grant.resource
            answer = self.provider.issue(
                client.client_id, grant.subject, scopes, issued_for, grant.claims, refresh=True
            )
            return JSONResponse(answer)
        if grant_type == TOKEN_EXCHANGE:
            subject_claims = self.provider.decode(str(form.get("subject_token", "")))
            if subject_claims is None or subject_claims.get("exp", 0) < time.time():
                raise OAuthProviderError("invalid_grant", "subject_token is not a valid token of this issuer")
            audience = _str(resource) or _str(form.get("audience"))
            scopes = requested or str(subject_claims.get("scope", "")).split()
            extra = {"act": {"sub": client.client_id}}
            answer = self.provider.issue(
                client.client_id, subject_claims["sub"], scopes, audience, extra, refresh=False
            )
            answer["issued_token_type"] = ACCESS_TOKEN_TYPE
            return JSONResponse(answer)
        raise OAuthProviderError("unsupported_grant_type", f"grant_type {grant_type!r} is not supported")

    def _reissue(self, client: Client, grant: Grant, scopes: list[str], resource: str | None) -> dict[str, Any]:
        resource = resource or grant.resource
        return self.provider.issue(client.client_id, grant.subject, scopes, resource, grant.claims, refresh=True)

    async def _register(self, request: Request) -> Response:
        body = await request.json()
        redirect_uris = [str(uri) for uri in body.get("redirect_uris") or []]
        method = body.get("token_endpoint_auth_method") or "client_secret_basic"
        if method not in ("client_secret_basic", "client_secret_post", "none"):
            raise OAuthProviderError("invalid_client_metadata", f"token_endpoint_auth_method {method!r}")
        client = Client(
            client_id=f"dcr-{secrets.token_hex(6)}",
            client_secret=None if method == "none" else secrets.token_urlsafe(24),
            redirect_uris=redirect_uris,
            grant_types=list(body.get("grant_types") or ["authorization_code", "refresh_token"]),
            token_endpoint_auth_method=method,
            scope=body.get("scope"),
        )
        self.provider.clients[client.client_id] = client
        answer = {**body, "client_id": client.client_id, "client_id_issued_at": int(time.time())}
        answer.update(token_endpoint_auth_method=method, grant_types=client.grant_types)
        if client.client_secret is not None:
            answer.update(client_secret=client.client_secret, client_secret_expires_at=0)
        return JSONResponse(answer, status_code=201)

    async def _introspect(self, request: Request) -> Response:
        self.provider.introspections += 1
        form = dict(await request.form())
        self._authenticate(request, form)
        token = str(form.get("token", ""))
        info = self.provider.opaque_tokens.get(token) or self.provider.decode(token)
        if info is None or token in self.provider.revoked or info.get("exp", 0) < time.time():
            return JSONResponse({"active": False})
        return JSONResponse({"active": True, "token_type": "Bearer", **info})

    async def _revoke(self, request: Request) -> Response:
        form = dict(await request.form())
        self._authenticate(request, form)
        self.provider.revoke(str(form.get("token", "")))
        return Response(status_code=200)


def authorization_redirect(redirect_uri: str, params: Mapping[str, str]) -> Response:
    """A 302 to the client's redirect URI with `params` added to its query."""
    separator = "&" if urlparse(redirect_uri).query else "?"
    return RedirectResponse(f"{redirect_uri}{separator}{urlencode(params)}", status_code=302)


def oauth_error(exc: OAuthProviderError) -> JSONResponse:
    """The RFC 6749 §5.2 error body."""
    return JSONResponse({"error": exc.error, "error_description": exc.description}, status_code=exc.status)


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def check_pkce(verifier: str, challenge: str) -> bool:
    """Whether `verifier` hashes (S256) to `challenge`."""
    return secrets.compare_digest(b64url_sha256(verifier), challenge)
