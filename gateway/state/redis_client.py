"""The redis extra, imported here once for every Redis store (state, artifacts, tasks).

`redis_client` makes a store's client with the stores' socket timeouts, and its commands (`RedisCommands`), which
fail as every store fails when the server cannot be reached.
"""

from __future__ import annotations

from typing import Any, Final, cast

from gateway.errors import MissingExtraError
from gateway.state.redis_commands import RedisCommands

try:
    import redis.asyncio as redis
    from redis.exceptions import RedisError
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingExtraError(
        'A redis:// state, artifact or task store needs the redis extra: pip install "adk-mcp-gateway[redis]".'
    ) from exc

__all__ = ["SOCKET_TIMEOUT", "redis_client"]

SOCKET_TIMEOUT: Final = 10.0
"""Seconds any one Redis command (or connecting) may take before the call fails."""


def redis_client(url: str, *, advice: str, closed_message: str, **options: Any) -> tuple[Any, RedisCommands]:
    """A redis-py asyncio client for `url` (`options`: more of `Redis.from_url`'s) and the commands on it.

    Args:
        url: the Redis URL.
        advice: the sentence that follows an unreachable server's error, saying what to check.
        closed_message: what a command after the store closed raises with.
        options: more of `Redis.from_url`'s keyword arguments.

    Raises:
        ValueError: `url` is not a Redis URL.
    """
    client: Any = cast(Any, redis.Redis).from_url(
        url, socket_timeout=SOCKET_TIMEOUT, socket_connect_timeout=SOCKET_TIMEOUT, **options
    )
    commands = RedisCommands(client, unreachable=(RedisError, OSError), advice=advice, closed_message=closed_message)
    return client, commands
