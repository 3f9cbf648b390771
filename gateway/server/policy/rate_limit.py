"""Token buckets by key: `calls` at once, refilled evenly over `per_seconds`; a refusal says when to retry."""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Final

__all__ = ["RateLimit", "RateLimiter"]

MAX_BUCKETS: Final = 100_000
"""Buckets kept at most; full ones (indistinguishable from new) are dropped first when there are more."""


@dataclass(frozen=True)
class RateLimit:
    """`calls` calls at once, then one more every `per_seconds / calls` seconds."""

    calls: int
    per_seconds: float

    @property
    def rate(self) -> float:
        """Tokens added per second."""
        return self.calls / self.per_seconds

    def describe(self) -> str:
        """E.g. `10 calls per 60 s`."""
        return f"{self.calls} call{'s' if self.calls != 1 else ''} per {self.per_seconds:g} s"


class RateLimiter:
    """Buckets by key; `take` spends one token from each of several buckets, or none of them."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._buckets: dict[Hashable, tuple[float, float, float]] = {}
        """key → (tokens, when counted, when it will be full again)."""

    def _tokens(self, key: Hashable, limit: RateLimit, now: float) -> float:
        tokens, at, _ = self._buckets.get(key, (float(limit.calls), now, now))
        return min(float(limit.calls), tokens + (now - at) * limit.rate)

    def take(self, buckets: Sequence[tuple[Hashable, RateLimit]]) -> float:
        """Spend one token from every bucket if each has one; returns 0, else the seconds until all would have.

        Nothing is spent when any bucket is empty (a refused call costs nothing).
        """
        now = self._clock()
        levels = [(key, limit, self._tokens(key, limit, now)) for key, limit in buckets]
        wait = max((((1.0 - tokens) / limit.rate) for _, limit, tokens in levels if tokens < 1.0), default=0.0)
        if wait > 0:
            return wait
        for key, limit, tokens in levels:
            left = tokens - 1.0
            self._buckets[key] = (left, now, now + (limit.calls - left) / limit.rate)
        if len(self._buckets) > MAX_BUCKETS:
            # A full bucket is the same as none at all.
            self._buckets = {key: bucket for key, bucket in self._buckets.items() if bucket[2] > now}
        return 0.0

    def give_back(self, buckets: Sequence[tuple[Hashable, RateLimit]]) -> None:
        """Return the token a `take` of the same buckets spent (on a call that turned out to do nothing)."""
        now = self._clock()
        for key, limit in buckets:
            tokens = self._tokens(key, limit, now) + 1.0
            if tokens >= limit.calls:
                self._buckets.pop(key, None)  # full: the same as none at all
            else:
                self._buckets[key] = (tokens, now, now + (limit.calls - tokens) / limit.rate)

    @property
    def kept(self) -> int:
        """How many buckets are kept (for tests and metrics)."""
        return len(self._buckets)
