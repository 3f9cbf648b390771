"""Shared fixtures."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    """Run async tests on asyncio (the backend the MCP SDK's transports are tested on)."""
    return "asyncio"
