"""`serve --workers N`: N worker processes serving one HTTP port, supervised by the process the user started.

The supervisor binds the port, then starts each worker as `adk-mcp-gateway <same arguments>` with the listening
socket handed down (`--worker-fd`); every worker accepts connections from that one socket and runs the whole
server (its upstreams, its sessions), sharing tool state with the others through the state store.

Why not uvicorn's own `workers=`: it needs the app as an import string (a factory), and its workers run a plain
`uvicorn.Server`, without this project's graceful drain (a tool call in flight keeps its result) or its request
deadlines. Here each worker is the ordinary single-process server.

Stopping: the workers run in their own sessions, so a terminal's Ctrl-C reaches only the supervisor, which hands
the signal on once to every worker (a second Ctrl-C, a second time: they cancel their calls in flight at once)
and waits for them, killing any that outlive their grace period (`serve --shutdown-grace`) by a few seconds. A
worker whose supervisor dies (even by `kill -9`) gets SIGTERM from the kernel (`PR_SET_PDEATHSIG`, Linux), so no
worker outlives it. A worker that crashes is started again; one that exits with a usage or configuration error (2)
stops the whole server with that code.

What workers do not share (each is its own process): handshake-era sessions (an `Mcp-Session-Id` lives in the
worker that created it, and a client's next connection may reach another), so several workers serve streamable
HTTP without sessions (`--stateless`, forced; state by `_meta` session key or principal); push-style upstream
calls held across a modern client's rounds (a round on another worker gets a retryable error). The answered input
rounds are remembered in the state store (`gateway.server.spent_rounds`), so a round is accepted once by them all.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Sequence
from typing import Final

import anyio
import anyio.abc

__all__ = ["WORKER_EXIT_FATAL", "die_with_supervisor", "supervise"]

logger = logging.getLogger(__name__)

WORKER_EXIT_FATAL: Final = 2
"""A worker exit code that stops the whole server (bad usage or configuration: every new worker would fail too)."""
STOP_SLACK: Final = 8.0
"""Seconds beyond the workers' grace period the supervisor waits for them after passing on a signal (a worker
answers its cancelled calls and closes its connections and upstreams in that time)."""
_RESTART_DELAY: Final = 1.0
_PR_SET_PDEATHSIG: Final = 1
_HANGUP: Final = (signal.SIGHUP,) if hasattr(signal, "SIGHUP") else ()


def die_with_supervisor(supervisor: int) -> None:
    """In a worker: have the kernel send SIGTERM when the supervisor dies; exit at once if it already has."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    # Checked after arming: the supervisor may have died before, and then the signal never comes.
    if os.getppid() != supervisor:
        logger.error("The supervising process %d is gone; this worker stops.", supervisor)
        raise SystemExit(1)


async def supervise(
    command: Sequence[str],
    sock: socket.socket,
    workers: int,
    env: dict[str, str],
    *,
    reloads: bool = False,
    grace: float = 10.0,
) -> int:
    """Run `workers` copies of `command` on `sock` until SIGINT or SIGTERM; returns the exit code.

    `command` gets `--worker-fd FD --worker-of PID` appended. Exit code: 0 after SIGINT or SIGTERM, 2 if a
    worker failed with a usage or configuration error. `grace`: the workers' `--shutdown-grace`. `SIGHUP` is passed
    on to every worker when they `reloads` (they serve a config, which each re-reads); otherwise it is ignored with a
    notice, as there is nothing to reload.
    """
    fd = sock.fileno()
    os.set_inheritable(fd, True)
    argv = [*command, "--worker-fd", str(fd), "--worker-of", str(os.getpid())]
    running: dict[int, anyio.abc.Process] = {}
    stopping = anyio.Event()
    outcome = {"code": 0}

    def stop(code: int, sig: signal.Signals | None) -> None:
        if not stopping.is_set():
            outcome["code"] = code
            stopping.set()
        if sig is not None:
            for process in list(running.values()):
                if process.returncode is None:
                    process.send_signal(sig)

    async def worker(index: int) -> None:
        while not stopping.is_set():
            process = await anyio.open_process(
                argv, pass_fds=[fd], start_new_session=True, env=env, stdin=subprocess.DEVNULL, stdout=None, stderr=None
            )
            running[index] = process
            try:
                code = await process.wait()
            finally:
                running.pop(index, None)
                await process.aclose()
            if stopping.is_set():
                return
            if code == WORKER_EXIT_FATAL:
                logger.error("Worker %d failed to start (exit code 2); stopping the server.", index)
                stop(WORKER_EXIT_FATAL, signal.SIGTERM)
                return
            logger.warning("Worker %d exited (%s); starting a new one.", index, code)
            await anyio.sleep(_RESTART_DELAY)

    async def relay_signals(*, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, *_HANGUP) as signals:
            task_status.started()
            async for sig in signals:
                if sig not in (signal.SIGINT, signal.SIGTERM):
                    hang_up()
                else:
                    if not stopping.is_set():
                        logger.info("Stopping (%s): passing it on to %d worker(s).", sig.name, len(running))
                    stop(0, sig)

    def hang_up() -> None:
        if not reloads:
            logger.warning("SIGHUP: the workers serve no config file, so there is nothing to reload.")
            return
        logger.info("SIGHUP: passing it on to %d worker(s), which reload their config.", len(running))
        for process in list(running.values()):
            if process.returncode is None:
                process.send_signal(signal.SIGHUP)

    try:
        async with anyio.create_task_group() as tg:
            await tg.start(relay_signals)
            async with anyio.create_task_group() as pool:
                for index in range(workers):
                    pool.start_soon(worker, index)
                await stopping.wait()
                # The workers' tasks end as their processes exit; past the grace period they are killed.
                pool.cancel_scope.deadline = anyio.current_time() + grace + STOP_SLACK
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            for process in list(running.values()):
                if process.returncode is None:
                    process.kill()
                    await process.wait()
    return outcome["code"]
