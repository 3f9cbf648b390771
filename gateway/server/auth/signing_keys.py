"""The issuer's signing keys (its JWKS), cached, following key rotation without letting a caller hammer the issuer.

After the first load, the JWKS is fetched again at most once per `refetch_interval` seconds, whatever asks for it:

- a set older than `max_age` seconds is refreshed in the background (inside `refreshing()`) while tokens keep
  being checked against the cached keys, so an issuer that fails or hangs delays no request; if the refresh fails,
  the cached keys stay in use and the next try comes an interval later;
- a token naming a `kid` the cache lacks waits for a refetch (the one under way, or a new one the interval
  allows): an issuer that rotated its key is followed at the first token signed with the new key, while a client
  sending random `kid`s causes at most one fetch per interval.

Before the first successful load every token waits for it; after a failed one, tokens are refused at once until the
interval has passed. Only a well-formed token with an accepted `alg` ever reaches these keys.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, cast

import anyio
import anyio.abc
from jwt import PyJWK
from jwt.exceptions import PyJWTError

from gateway.errors import AuthorizationServerError

__all__ = ["SigningKeys"]

logger = logging.getLogger(__name__)

JwksFetch = Callable[[], Awaitable[dict[str, Any]]]


class SigningKeys:
    """Verification keys by `kid`, from a JWKS fetched through `fetch`."""

    def __init__(self, fetch: JwksFetch, *, refetch_interval: float, max_age: float) -> None:
        self._fetch_jwks = fetch
        self._refetch_interval = refetch_interval
        self._max_age = max_age
        self._jwks: list[dict[str, Any]] | None = None
        self._fetched_at = 0.0
        self._next_fetch_at = 0.0
        self._fetching: anyio.Event | None = None
        self._failure = "The JWKS has not been fetched yet."
        self._task_group: anyio.abc.TaskGroup | None = None
        self._prepared: dict[tuple[str | None, str], PyJWK] = {}
        self.fetches = 0
        """How many times the JWKS was fetched (for tests and metrics)."""

    @asynccontextmanager
    async def refreshing(self) -> AsyncGenerator[SigningKeys]:
        """Fetch in the background while the block runs; outside one, a fetch runs in the request that needs it."""
        async with anyio.create_task_group() as tg:
            self._task_group = tg
            try:
                yield self
            finally:
                self._task_group = None
                tg.cancel_scope.cancel()

    async def candidates(self, kid: str | None, algorithm: str) -> list[PyJWK]:
        """The keys that may have signed a token with this `kid` (all keys if it names none) and `alg`.

        A key whose JWK names another `alg`, or whose type cannot do `algorithm`, is no candidate.

        Raises:
            AuthorizationServerError: there are no keys yet and the JWKS cannot be fetched (now).
        """
        now = anyio.current_time()
        if self._jwks is None:
            if self._fetching is None and now < self._next_fetch_at:
                raise AuthorizationServerError(
                    f"{self._failure} The next try is in {self._next_fetch_at - now:.0f} s (auth.jwksRefetchInterval)."
                )
            await self._fetched()
            if self._jwks is None:
                raise AuthorizationServerError(self._failure)
        elif now - self._fetched_at >= self._max_age and self._fetch_allowed(now):
            if self._task_group is None:
                await self._fetched()
            else:
                self._start_fetch(self._task_group)
        found = self._matching(kid)
        if not found and kid is not None and (self._fetching is not None or self._fetch_allowed(now)):
            logger.info("Token signed with unknown key id %r; fetching the JWKS again.", kid[:64])
            await self._fetched()
            found = self._matching(kid)
        return [key for jwk in found if (key := self._prepare(jwk, algorithm)) is not None]

    def _fetch_allowed(self, now: float) -> bool:
        return self._fetching is None and now >= self._next_fetch_at

    def _start_fetch(self, tg: anyio.abc.TaskGroup) -> anyio.Event:
        if self._fetching is None:
            self._fetching = anyio.Event()
            tg.start_soon(self._fetch, self._fetching)
        return self._fetching

    async def _fetched(self) -> None:
        """Return once the fetch under way, or a new one, has ended (whether it succeeded or not)."""
        if self._task_group is not None:
            # In the background: a request that gives up waiting does not cancel the fetch others wait for.
            await self._start_fetch(self._task_group).wait()
        elif self._fetching is not None:
            await self._fetching.wait()
        else:
            self._fetching = anyio.Event()
            await self._fetch(self._fetching)

    async def _fetch(self, done: anyio.Event) -> None:
        started = anyio.current_time()
        first = self._jwks is None
        try:
            document = await self._fetch_jwks()
        except AuthorizationServerError as exc:
            self._failure = str(exc)
            if not first:
                logger.warning(
                    "Keeping the cached signing keys: the JWKS could not be fetched again (%s); next try in %g s.",
                    exc,
                    self._refetch_interval,
                )
        else:
            self._store(document)
        finally:
            # A first load that worked spends no interval, so a key rotated since is followed at its first token.
            loaded_first = first and self._jwks is not None
            self._next_fetch_at = started if loaded_first else started + self._refetch_interval
            self._fetching = None
            done.set()

    def _store(self, document: dict[str, Any]) -> None:
        self.fetches += 1
        keys = [cast("dict[str, Any]", k) for k in document.get("keys", []) if isinstance(k, dict)]
        self._jwks = [k for k in keys if k.get("use", "sig") == "sig"]
        self._fetched_at = anyio.current_time()
        self._prepared.clear()
        logger.debug("Fetched %d signing keys: %s", len(self._jwks), [k.get("kid") for k in self._jwks])

    def _matching(self, kid: str | None) -> list[dict[str, Any]]:
        return [k for k in self._jwks or [] if kid is None or k.get("kid") == kid]

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
