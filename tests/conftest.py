"""Shared fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.redis_server import running_redis


@pytest.fixture
def anyio_backend() -> str:
    """Run async tests on asyncio (the backend the MCP SDK's transports are tested on)."""
    return "asyncio"


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """One real `redis-server` for the whole run (skipped without the binary, except under CI)."""
    with running_redis() as url:
        yield url
