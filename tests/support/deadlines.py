"""How long a test waits on a peer before it fails: a bound that turns a hang into a failure, never a measurement."""

from __future__ import annotations

from typing import Final

__all__ = ["DEADLINE", "LONG_DEADLINE"]

DEADLINE: Final = 30.0
"""Seconds for one exchange with a loopback server or child process (`anyio.fail_after(DEADLINE)`)."""
LONG_DEADLINE: Final = 60.0
"""Seconds for a test that runs a whole agent turn or a benchmark round, which take several exchanges."""
