"""Fixtures for the server-mode tests (helpers live in `server_harness`, the tools in `fixture_tools`)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest


@pytest.fixture
def state_file(tmp_path: Path) -> Path:
    """A fresh SQLite state file path."""
    return tmp_path / "state.db"


@pytest.fixture
def marker(tmp_path: Path) -> anyio.Path:
    """A file path a tool writes to prove it ran."""
    return anyio.Path(tmp_path / "marker.txt")
