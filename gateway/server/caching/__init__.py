"""Cache hints (SEP-2549): the `ttlMs` and `cacheScope` a listing or a read carries, merged from its sources."""

from gateway.server.caching.hints import LOCAL_HINT, UNKNOWN_HINT, HintedSource, merged_hint, stamped
from gateway.server.caching.listings import with_every_listing

__all__ = ["LOCAL_HINT", "UNKNOWN_HINT", "HintedSource", "merged_hint", "stamped", "with_every_listing"]
