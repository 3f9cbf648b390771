"""How much the benchmark measures: rounds, calls and sizes, for a full run and for `--smoke`."""

from __future__ import annotations

from dataclasses import dataclass

SESSIONS = 8
"""Concurrent sessions in the throughput figures."""


@dataclass(frozen=True)
class Settings:
    """Rounds and calls as given; everything else follows from them and from `smoke`.

    The smoke run keeps every section and path but shrinks the expensive sizes (catalog, sessions held open,
    stdio upstreams), so CI can run the whole script in well under a minute; the row labels say which sizes ran.
    """

    rounds: int
    calls: int
    smoke: bool

    @property
    def warmup(self) -> int:
        """Untimed calls per session before a timed round."""
        return max(2, self.calls // 20)

    @property
    def catalog_rounds(self) -> int:
        """Rounds of the catalog section (each starts a fresh gateway and opens 20 upstream sessions twice)."""
        return min(self.rounds, 3)

    @property
    def catalog_upstreams(self) -> int:
        return 4 if self.smoke else 20

    @property
    def catalog_tools(self) -> int:
        """Tools per catalog upstream."""
        return 50

    @property
    def listings(self) -> int:
        """Warm `tools/list` repeats per round."""
        return 3

    @property
    def routed_calls(self) -> int:
        """Calls into the merged catalog per round."""
        return max(5, self.calls // 10)

    @property
    def blob_calls(self) -> int:
        """1 MiB calls per round and case."""
        return 3 if self.smoke else max(5, self.calls // 20)

    @property
    def footprint_rounds(self) -> int:
        return min(self.rounds, 2)

    @property
    def footprint_sessions(self) -> int:
        """Sessions held open against the gateway process."""
        return 20 if self.smoke else 100

    @property
    def stdio_upstreams(self) -> int:
        """Stdio upstreams of the gateway process."""
        return 3 if self.smoke else 10
