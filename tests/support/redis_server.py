"""A real `redis-server` for tests: a child process on a free loopback port, with its files in a temp directory.

`running_redis()` starts one and yields its URL; `redis_url` (the session fixture in `tests/conftest.py`) shares
one server across the run, and each test keeps apart by its own key prefix or app name. Without the binary the
tests that need it are skipped locally, and fail under CI (`CI` set), where `.ci/run` installs it.
"""

from __future__ import annotations

import collections
import os
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import pytest

__all__ = ["REDIS_SERVER", "redis_server_or_skip", "running_redis"]

REDIS_SERVER = "redis-server"
_READY = "Ready to accept connections"
_START_DEADLINE = 60.0
"""Seconds redis-server may take to say it is ready (a machine busy with other test runs can be slow)."""
_ATTEMPTS = 5


def redis_server_or_skip() -> str:
    """The `redis-server` binary; skips the test when it is missing (fails it under CI, which must have it)."""
    binary = shutil.which(REDIS_SERVER)
    if binary is None:
        reason = (
            "redis-server is not installed: `apt-get install redis-server` (Debian/Ubuntu) to run the Redis "
            "state store and replica tests; .ci/run installs it."
        )
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return binary


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_ready(process: subprocess.Popen[str], output: IO[str], log: collections.deque[str]) -> bool:
    """Read the server's log until it says it is ready (True) or it exits (False); bounded by a deadline."""
    # Blocking reads: a selector on a buffered text stream misses lines already read into the buffer.
    timer = threading.Timer(_START_DEADLINE, process.kill)
    timer.start()
    try:
        while line := output.readline():
            log.append(line.rstrip())
            if _READY in line:
                return True
    finally:
        timer.cancel()
    if process.poll() is not None and timer.finished.is_set() and process.returncode < 0:
        raise TimeoutError(f"redis-server did not start within {_START_DEADLINE:g} s:\n" + "\n".join(log))
    return False


@contextmanager
def running_redis(binary: str | None = None) -> Iterator[str]:
    """Run a fresh `redis-server` (no persistence, loopback only) until the block ends; yields `redis://…`."""
    binary = binary or redis_server_or_skip()
    with tempfile.TemporaryDirectory(prefix="redis-test-") as directory:
        log: collections.deque[str] = collections.deque(maxlen=200)
        for _ in range(_ATTEMPTS):
            port = _free_port()
            process = subprocess.Popen(
                [
                    binary,
                    "--port",
                    str(port),
                    "--bind",
                    "127.0.0.1",
                    "--dir",
                    directory,
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--logfile",
                    "",
                    "--daemonize",
                    "no",
                    "--protected-mode",
                    "yes",
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                text=True,
                cwd=Path(directory),
            )
            assert process.stdout is not None
            if _wait_ready(process, process.stdout, log):
                break
            process.wait()  # it exited (the port was taken meanwhile): try another
        else:
            raise RuntimeError("redis-server did not start:\n" + "\n".join(log))
        # Keep reading its log so the pipe never fills and blocks the server.
        drain = threading.Thread(target=collections.deque, args=(process.stdout, 0), daemon=True)
        drain.start()
        try:
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            drain.join(timeout=10)
            process.stdout.close()
