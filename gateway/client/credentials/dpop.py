"""`DPoPAuth`: sender-constrained tokens (DPoP, RFC 9449) for a sign-in that otherwise deals in bearer tokens.

It wraps the `httpx2.Auth` of a sign-in and proves possession of one key (P-256, made per credential, never stored)
on the requests that matter: each token request carries a fresh proof (§5), so the authorization server binds the
token to the key; each request that presents the token sends it with the `DPoP` scheme instead of `Bearer`, with a
fresh proof naming the token's hash (§7.1). A server that wants a nonce answers with `use_dpop_nonce` and a
`DPoP-Nonce` header (§8 for the authorization server, §9 for the upstream): the request goes once more with a proof
naming that nonce, and later proofs to that origin name it too.

The MCP SDK's token model knows only the `Bearer` type, so the token response's `token_type` is read here (a
`DPoP` token is what this auth presents) and handed on as `Bearer`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
import uuid
from collections.abc import AsyncGenerator
from typing import Any, Final, cast

import httpx2
import jwt
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm

__all__ = ["DPoPAuth"]

_BAD_REQUEST: Final = 400
_UNAUTHORIZED: Final = 401
_OK: Final = 200
_NONCE_ERROR: Final = "use_dpop_nonce"
_ENTITY_HEADERS: Final = ("content-length", "content-encoding", "transfer-encoding")


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _origin(url: httpx2.URL) -> str:
    return f"{url.scheme}://{url.netloc.decode()}"


def _is_token_request(request: httpx2.Request) -> bool:
    content_type = request.headers.get("content-type", "")
    return (
        request.method == "POST"
        and content_type.startswith("application/x-www-form-urlencoded")
        and (b"grant_type=" in request.content)
    )


class DPoPAuth(httpx2.Auth):
    """Adds DPoP proofs to the requests of another auth (see the module docstring)."""

    def __init__(self, inner: httpx2.Auth) -> None:
        self._inner = inner
        self._key = ec.generate_private_key(ec.SECP256R1())
        self._jwk = ECAlgorithm.to_jwk(self._key.public_key(), as_dict=True)
        self._nonces: dict[str, str] = {}
        self._bound: set[str] = set()
        """The access tokens issued as DPoP tokens (a server may still issue bearer tokens, presented as such)."""

    def proof(self, method: str, url: httpx2.URL, access_token: str | None = None) -> str:
        """A fresh proof for one request (RFC 9449 §4.2), naming the origin's nonce and the token's hash if any."""
        claims: dict[str, Any] = {
            "jti": str(uuid.uuid4()),
            "htm": method,
            "htu": str(url.copy_with(query=None, fragment=None)),
            "iat": int(time.time()),
        }
        nonce = self._nonces.get(_origin(url))
        if nonce is not None:
            claims["nonce"] = nonce
        if access_token is not None:
            claims["ath"] = _b64url(hashlib.sha256(access_token.encode()).digest())
        return jwt.encode(claims, self._key, algorithm="ES256", headers={"typ": "dpop+jwt", "jwk": self._jwk})

    def _prove(self, request: httpx2.Request) -> httpx2.Request:
        authorization = request.headers.get("authorization", "")
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() in ("bearer", "dpop") and token in self._bound:
            request.headers["Authorization"] = f"DPoP {token}"
            request.headers["DPoP"] = self.proof(request.method, request.url, token)
        elif _is_token_request(request):
            request.headers["DPoP"] = self.proof(request.method, request.url)
        return request

    async def _wants_nonce(self, request: httpx2.Request, response: httpx2.Response) -> bool:
        """Whether the server asked for a proof with its new nonce (which is kept for its origin)."""
        nonce = response.headers.get("dpop-nonce")
        if nonce is None or "DPoP" not in request.headers:
            return False
        self._nonces[_origin(request.url)] = nonce
        if response.status_code == _UNAUTHORIZED:
            return _NONCE_ERROR in response.headers.get("www-authenticate", "")
        if response.status_code == _BAD_REQUEST and _is_token_request(request):
            return _NONCE_ERROR.encode() in await response.aread()
        return False

    async def _as_bearer(self, request: httpx2.Request, response: httpx2.Response) -> httpx2.Response:
        """A token response whose `DPoP` token type reads `Bearer` (the SDK's token model knows no other)."""
        if response.status_code != _OK or not _is_token_request(request):
            return response
        try:
            body = json.loads(await response.aread())
        except ValueError:
            return response
        if not isinstance(body, dict):
            return response
        fields = cast("dict[str, Any]", body)
        token = fields.get("access_token")
        if str(fields.get("token_type", "")).lower() != "dpop" or not isinstance(token, str):
            return response
        fields["token_type"] = "Bearer"
        self._bound.add(token)
        headers = [(name, value) for name, value in response.headers.items() if name.lower() not in _ENTITY_HEADERS]
        return httpx2.Response(response.status_code, headers=headers, json=fields, request=request)

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = self._inner.async_auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                response = yield self._prove(outgoing)
                if await self._wants_nonce(outgoing, response):
                    response = yield self._prove(outgoing)
                outgoing = await flow.asend(await self._as_bearer(outgoing, response))
        except StopAsyncIteration:
            return
        finally:
            # A flow left mid-way (the request cancelled) must end too: the inner auth may hold a lock across it.
            await flow.aclose()
