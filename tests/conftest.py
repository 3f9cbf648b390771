"""Shared fixtures."""

from __future__ import annotations

import logging
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


@pytest.fixture(autouse=True)
def root_logging_restored() -> Iterator[None]:
    """Put the root logger's handlers and level back after each test.

    `adk-mcp-gateway`'s `main()` run in-process configures logging for a process: a handler on the `sys.stderr` of
    that moment, which under pytest is the test's capture file. Left behind, it writes to a closed file in every
    later test ("--- Logging error ---" on stderr, which broke an unrelated test's stderr check when the suites ran
    in another order).
    """
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
