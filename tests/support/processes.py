"""The child processes of a process, read from `/proc` (Linux): what a test checks nothing outlives its owner with.

A zombie (exited, not yet reaped) counts as gone. `wait_for_file` waits for a file another task or process writes,
the way a child says it got somewhere (a file has no event, so it is polled).
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio

__all__ = ["alive", "child_pids", "descendants", "wait_for_file"]


def child_pids(pid: int | None = None) -> set[int]:
    """The live direct children of a process (default: this one)."""
    children: set[int] = set()
    try:
        threads = list(Path(f"/proc/{pid or os.getpid()}/task").iterdir())
    except FileNotFoundError:
        return children
    for thread in threads:
        try:
            children.update(int(child) for child in (thread / "children").read_text().split())
        except FileNotFoundError:
            continue  # the thread ended while we looked
    return {child for child in children if alive(child)}


def descendants(pid: int | None = None) -> set[int]:
    """The live descendants of a process (default: this one)."""
    found: set[int] = set()
    todo = [pid or os.getpid()]
    while todo:
        for child in child_pids(todo.pop()) - found:
            found.add(child)
            todo.append(child)
    return found


def alive(pid: int) -> bool:
    """False for a process that exited (a zombie not yet reaped counts as gone)."""
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return status.rsplit(")", 1)[1].split()[0] != "Z"


async def wait_for_file(path: Path | anyio.Path, deadline: float) -> str:
    """The text of `path`, once another task or process has written it (polled: a file has no event)."""
    file = anyio.Path(path)
    with anyio.fail_after(deadline):
        while True:
            text = await file.read_text() if await file.exists() else ""
            if text:
                return text
            await anyio.sleep(0.02)
