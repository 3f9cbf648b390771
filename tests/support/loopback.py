"""Loopback sockets and ports: a listening socket to hand a server, a free port for a child, a wait for that port."""

from __future__ import annotations

import socket

import anyio
import anyio.abc

__all__ = ["bound_socket", "free_port", "wait_for_port"]


def bound_socket(port: int = 0, *, backlog: int = 128) -> socket.socket:
    """A listening TCP socket on `127.0.0.1` (a free port unless one is given)."""
    # IPPROTO_TCP, not the default 0: asyncio sets TCP_NODELAY on accepted connections only when the socket's
    # `proto` says TCP. Without it, Nagle plus delayed ACKs add ~40 ms to every JSON (2026-era) response.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(backlog)
    return sock


def free_port() -> int:
    """A loopback port that was free a moment ago (for a child that binds by port number).

    The port is found free and released; another process could take it in between, which a loopback test on a
    quiet machine can live with.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def wait_for_port(port: int, deadline: float, process: anyio.abc.Process | None = None) -> None:
    """Wait until something accepts TCP connections on `127.0.0.1:port` (a child without a health endpoint).

    Raises:
        TimeoutError: nothing accepted within `deadline` seconds.
        RuntimeError: `process` (the child meant to listen) exited first.
    """
    with anyio.fail_after(deadline):
        while True:
            if process is not None and process.returncode is not None:
                raise RuntimeError(f"the child process exited with {process.returncode} before it was ready")
            try:
                stream = await anyio.connect_tcp("127.0.0.1", port)
            except OSError:
                await anyio.sleep(0.05)
            else:
                await stream.aclose()
                return
