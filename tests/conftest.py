"""Shared fixtures."""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Iterator

import pytest

from tests.support.redis_server import running_redis


def pytest_configure(config: pytest.Config) -> None:
    """Tool search's cache directory (encoded catalogs, the encoder's ONNX model) in pytest's own cache rather than
    the user's home: kept between runs, so the model is built once per checkout, and inherited by child processes.
    A directory set by whoever runs the tests is left as it is."""
    variable = "ADK_MCP_GATEWAY_CACHE_DIR"  # gateway.search._vector_cache.CACHE_DIR_ENV, without importing numpy here
    if variable not in os.environ:
        cache = getattr(config, "cache", None)  # None with -p no:cacheprovider
        os.environ[variable] = str(cache.mkdir("adk-mcp-gateway") if cache else tempfile.mkdtemp(prefix="gateway-"))


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
