"""Where things are in the checkout the tests run from."""

from __future__ import annotations

from pathlib import Path
from typing import Final

__all__ = ["ROOT"]

ROOT: Final = Path(__file__).resolve().parents[2]
"""The project root (where pyproject.toml, gateway/ and examples/ are)."""
