"""The issuer's signing keys (its JWKS), cached, following key rotation without letting a caller hammer the issuer.

A token naming a `kid` the cache lacks makes the cache fetch the JWKS again, at most once per
`refetch_interval` seconds: an issuer that rotated its key is followed at the first token signed with the new
key, while a client sending random `kid`s causes at most one fetch per interval. The whole set is also fetched
again after `max_age` seconds, so retired keys drop out.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, cast

import anyio
from jwt import PyJWK
from jwt.exceptions import PyJWTError

from gateway.errors import AuthorizationServerError

__all__ = ["SigningKeys"]

logger = logging.getLogger(__name__)

JwksFetch = Callable[[], Awaitable[dict[str, Any]]]


class SigningKeys:
    """Verification keys by `kid`, from a JWKS fetched through `fetch`."""

    def __init__(self, fetch: JwksFetch, *, refetch_interval: float, max_age: float) -> None:
        self._fetch = fetch
        self._refetch_interval = refetch_interval
        self._max_age = max_age
        self._jwks: list[dict[str, Any]] | None = None
        self._fetched_at = 0.0
        self._unknown_kid_fetch_at: float | None = None
        self._prepared: dict[tuple[str | None, str], PyJWK] = {}
        self._lock = anyio.Lock()
        self.fetches = 0
        """How many times the JWKS was fetched (for tests and metrics)."""

    async def _refresh(self) -> None:
        document = await self._fetch()
        self.fetches += 1
        keys = [cast("dict[str, Any]", k) for k in document.get("keys", []) if isinstance(k, dict)]
        self._jwks = [k for k in keys if k.get("use", "sig") == "sig"]
        self._fetched_at = anyio.current_time()
        self._prepared.clear()
        logger.debug("Fetched %d signing keys: %s", len(self._jwks), [k.get("kid") for k in self._jwks])

    def _matching(self, kid: str | None) -> list[dict[str, Any]]:
        return [k for k in self._jwks or [] if kid is None or k.get("kid") == kid]

    async def candidates(self, kid: str | None, algorithm: str) -> list[PyJWK]:
        """The keys that may have signed a token with this `kid` (all keys if it names none) and `alg`.

        A key whose JWK names another `alg`, or whose type cannot do `algorithm`, is no candidate.

        Raises:
            AuthorizationServerError: there are no keys yet and the JWKS cannot be fetched.
        """
        async with self._lock:
            now = anyio.current_time()
            if self._jwks is None or now - self._fetched_at >= self._max_age:
                try:
                    await self._refresh()
                except AuthorizationServerError:
                    if self._jwks is None:
                        raise
                    logger.warning("Keeping the cached signing keys: the JWKS could not be fetched again.")
            found = self._matching(kid)
            if not found and kid is not None:
                last = self._unknown_kid_fetch_at
                if last is None or now - last >= self._refetch_interval:
                    self._unknown_kid_fetch_at = now
                    logger.info("Token signed with unknown key id %r; fetching the JWKS again.", kid[:64])
                    await self._refresh()
                    found = self._matching(kid)
            return [key for jwk in found if (key := self._prepare(jwk, algorithm)) is not None]

    def _prepare(self, jwk: dict[str, Any], algorithm: str) -> PyJWK | None:
        declared = jwk.get("alg")
        if declared is not None and declared != algorithm:
            return None
        cache_key = (cast("str | None", jwk.get("kid")), algorithm)
        if cache_key not in self._prepared:
            try:
                self._prepared[cache_key] = PyJWK(jwk, algorithm=algorithm)
            except PyJWTError:
                return None
        return self._prepared[cache_key]
