"""`FileWatcher`: notice that files changed, once per edit, by polling their status.

Editors save in several steps (truncate then write, write a temporary file then rename it over the original,
write a backup first), and a config read half-way through one of those is invalid or, worse, valid but
incomplete. So a change is reported only once the files have stopped changing for `settle` seconds. Polling
`stat` (modification time, size, inode) needs no dependency and sees a rename over the file as well as a write.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Final

import anyio
import anyio.abc
import anyio.to_thread

__all__ = ["DEFAULT_POLL_INTERVAL", "DEFAULT_SETTLE", "FileWatcher"]

logger = logging.getLogger(__name__)

DEFAULT_POLL_INTERVAL: Final = 0.25
"""Seconds between two looks at the files."""
DEFAULT_SETTLE: Final = 0.3
"""Seconds the files must stay unchanged before a change is reported (one report per multi-step save)."""

_Stamp = tuple[int, int, int] | None
"""A file's modification time (ns), size and inode; None while it does not exist."""


def _stamps(paths: Sequence[Path]) -> tuple[tuple[Path, _Stamp], ...]:
    stamps: list[tuple[Path, _Stamp]] = []
    for path in paths:
        try:
            status = os.stat(path)
        except OSError:
            stamps.append((path, None))
        else:
            stamps.append((path, (status.st_mtime_ns, status.st_size, status.st_ino)))
    return tuple(stamps)


class FileWatcher:
    """Calls `on_change()` after the files `paths()` names changed and then stayed unchanged for `settle` seconds.

    `paths` is asked again after each report (a config reload may name other files).
    """

    def __init__(
        self,
        paths: Callable[[], Sequence[Path]],
        on_change: Callable[[], Awaitable[None]],
        *,
        interval: float = DEFAULT_POLL_INTERVAL,
        settle: float = DEFAULT_SETTLE,
    ) -> None:
        self._paths = paths
        self._on_change = on_change
        self._interval = interval
        self._settle = settle
        self.changed: list[Path] = []
        """The files whose change `on_change` is being told of (for its log line)."""

    async def _look(self) -> tuple[tuple[Path, _Stamp], ...]:
        paths = list(self._paths())
        return await anyio.to_thread.run_sync(_stamps, paths)

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Watch until cancelled (started, for `TaskGroup.start`, once it has taken its first look)."""
        seen = await self._look()
        task_status.started()
        while True:
            await anyio.sleep(self._interval)
            now = await self._look()
            if now == seen:
                continue
            # Changed: wait for the save to finish (no change for `settle` seconds, and the files exist).
            while True:
                await anyio.sleep(self._settle)
                again = await self._look()
                if again == now and all(stamp is not None for _, stamp in again):
                    break
                now = again
            # What was read is what was reported: a change made while `on_change` ran is seen on the next look
            # (a reload that names other files makes one more look differ: a reload that finds nothing to do).
            before = dict(seen)
            self.changed = [path for path, stamp in now if path not in before or before[path] != stamp]
            seen = now
            await self._on_change()
