"""OAuth access tokens from the trusted issuer → the principal they stand for (the SDK's `TokenVerifier` seam).

A JWT (RFC 9068) is checked here: an accepted asymmetric `alg`, a signature by one of the issuer's keys (looked
up by `kid`), `exp` / `nbf` / `iat` within `leeway`, `iss` exactly the issuer, `aud` one of the accepted
audiences (RFC 8707). An opaque token is asked about at the issuer's introspection endpoint (RFC 7662) when
that is configured; the answer must be active and, as for a JWT, name an accepted audience in `aud` (an answer
without `aud` is refused); active answers are reused for a short while.

The principal is the token's `sub` (for a client-credentials token without one: its `client_id`); the claims
named in `principal_claims` (e.g. `groups`) travel with it in `AccessToken.claims` for policies.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any, Final, cast

import jwt
from jwt.exceptions import InvalidSignatureError, PyJWTError
from mcp.server.auth.provider import AccessToken

from gateway.errors import AuthorizationServerError
from gateway.server.auth.authorization_server import AuthorizationServer
from gateway.server.auth.oauth_settings import OAuthSettings
from gateway.server.auth.signing_keys import SigningKeys

__all__ = ["OAuthTokenVerifier", "token_scopes"]

logger = logging.getLogger(__name__)

_INTROSPECTION_CACHE_SIZE: Final = 10_000


def token_scopes(claims: dict[str, Any]) -> list[str]:
    """The scopes a token grants: `scope` (space-separated, RFC 9068 / 7662) or `scp` (a list or a string)."""
    value = claims.get("scope", claims.get("scp"))
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list):
        return [str(item) for item in cast("list[Any]", value)]
    return []


def _variants(url: str) -> list[str]:
    """A URL with and without a trailing slash (issuers and resources are compared as strings otherwise)."""
    bare = url.rstrip("/")
    return [bare, bare + "/"] if bare != url else [url, url + "/"]


class OAuthTokenVerifier:
    """Validates bearer tokens of one issuer for this resource; serve inside `running()`, or `aclose()` when done."""

    def __init__(self, settings: OAuthSettings, authorization_server: AuthorizationServer | None = None) -> None:
        self.settings = settings
        self.authorization_server = authorization_server or AuthorizationServer(settings)
        self.keys = SigningKeys(
            self.authorization_server.jwks,
            refetch_interval=settings.jwks_refetch_interval,
            max_age=settings.jwks_max_age,
        )
        self._introspected: dict[str, tuple[AccessToken, float]] = {}

    @asynccontextmanager
    async def running(self) -> AsyncGenerator[OAuthTokenVerifier]:
        """Refresh aged signing keys in the background while the block runs; close the connections after it."""
        try:
            async with self.keys.refreshing():
                yield self
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        """Close the connections to the authorization server."""
        await self.authorization_server.aclose()

    async def verify_token(self, token: str) -> AccessToken | None:
        """The token's principal and scopes, or None when it is not valid here (the reason is logged)."""
        try:
            try:
                header = jwt.get_unverified_header(token)
            except PyJWTError:
                if self.settings.introspection is None:
                    logger.info("Refused a bearer token: not a JWT, and auth.introspection is not configured.")
                    return None
                return await self._introspect(token)
            return await self._verify_jwt(token, header)
        except AuthorizationServerError as exc:
            logger.warning("Refused a bearer token: the authorization server could not be asked: %s", exc)
            return None

    async def _verify_jwt(self, token: str, header: dict[str, Any]) -> AccessToken | None:
        algorithm = header.get("alg")
        if not isinstance(algorithm, str) or algorithm not in self.settings.algorithms:
            logger.info("Refused a bearer token: algorithm %r is not accepted.", str(algorithm)[:16])
            return None
        kid = header.get("kid")
        keys = await self.keys.candidates(kid if isinstance(kid, str) else None, algorithm)
        if not keys:
            logger.info("Refused a bearer token: no signing key %r for %s.", str(kid)[:64], algorithm)
            return None
        settings = self.settings
        for key in keys:
            try:
                claims: dict[str, Any] = jwt.decode(
                    token,
                    key,
                    algorithms=[algorithm],
                    audience=[v for audience in settings.accepted_audiences for v in _variants(audience)],
                    issuer=_variants(settings.issuer),
                    leeway=settings.leeway,
                    options={"require": ["exp", "iss", "aud"], "enforce_minimum_key_length": True},
                )
            except InvalidSignatureError:
                continue
            except PyJWTError as exc:
                logger.info("Refused a bearer token: %s.", exc)
                return None
            return self._access_token(token, claims)
        logger.info("Refused a bearer token: its signature does not verify with key %r.", str(kid)[:64])
        return None

    def _access_token(self, token: str, claims: dict[str, Any]) -> AccessToken | None:
        subject = claims.get("sub") or claims.get("client_id") or claims.get("azp")
        if not isinstance(subject, str) or not subject:
            logger.info("Refused a bearer token: it names no subject (sub, client_id or azp).")
            return None
        client_id = claims.get("client_id") or claims.get("azp") or subject
        kept = {name: claims[name] for name in self.settings.principal_claims if name in claims}
        exp = claims.get("exp")
        return AccessToken(
            token=token,
            client_id=str(client_id),
            scopes=token_scopes(claims),
            expires_at=int(exp) if isinstance(exp, (int, float)) else None,
            resource=self.settings.resource,
            subject=subject,
            claims={"iss": self.settings.issuer, **kept},
        )

    async def _introspect(self, token: str) -> AccessToken | None:
        digest = hashlib.sha256(token.encode()).hexdigest()
        now = time.time()
        cached = self._introspected.get(digest)
        if cached is not None and cached[1] > now:
            return cached[0]
        answer = await self.authorization_server.introspect(token)
        reason = self._introspection_refusal(answer, now)
        if reason is not None:
            logger.info("Refused a bearer token: introspection says %s.", reason)
            return None
        access = self._access_token(token, answer)
        if access is not None:
            assert self.settings.introspection is not None
            until = now + self.settings.introspection.cache_seconds
            if access.expires_at is not None:
                until = min(until, access.expires_at)
            self._remember(digest, access, until, now)
        return access

    def _introspection_refusal(self, answer: dict[str, Any], now: float) -> str | None:
        leeway = self.settings.leeway
        if answer.get("active") is not True:
            return "it is not active"
        exp, nbf = answer.get("exp"), answer.get("nbf")
        if isinstance(exp, (int, float)) and exp + leeway < now:
            return "it has expired"
        if isinstance(nbf, (int, float)) and nbf - leeway > now:
            return "it is not valid yet"
        issuer = answer.get("iss")
        if issuer is not None and issuer not in _variants(self.settings.issuer):
            return f"it was issued by {str(issuer)[:100]!r}"
        # RFC 7662 makes `aud` optional, but a token that names no audience could be meant for any service of the
        # issuer: like a JWT's, it must name this resource (or an `auth.audience`).
        audience = answer.get("aud")
        if isinstance(audience, str):
            given = [audience]
        elif isinstance(audience, list):
            given = [str(a) for a in cast("list[Any]", audience)]
        else:
            given = []
        accepted = {v for a in self.settings.accepted_audiences for v in _variants(a)}
        if not accepted.intersection(given):
            return f"it is meant for {given!r}" if given else "it names no audience (aud)"
        return None

    def _remember(self, digest: str, access: AccessToken, until: float, now: float) -> None:
        if len(self._introspected) >= _INTROSPECTION_CACHE_SIZE:
            self._introspected = {k: v for k, v in self._introspected.items() if v[1] > now}
            while len(self._introspected) >= _INTROSPECTION_CACHE_SIZE:
                del self._introspected[next(iter(self._introspected))]
        self._introspected[digest] = (access, until)
