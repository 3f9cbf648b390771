"""The event loop and HTTP parser a server runs on: uvloop and httptools with the `speed` extra, else asyncio's own.

`auto` (the default of `serve --loop` and `--http-parser`) takes uvloop and httptools when they are installed
(`pip install "adk-mcp-gateway[speed]"`) and asyncio's loop and h11 otherwise; `asyncio` and `h11` force the plain
ones; `uvloop` and `httptools` insist, and a server asked for one that is not installed refuses to start with a
message naming the extra. The choice changes speed only: the protocol, the request deadlines and the graceful
shutdown are the same on either.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Awaitable, Callable
from typing import Final, Literal, TypeVar

import anyio

from gateway.errors import ConfigError

__all__ = [
    "HttpParser",
    "HttpParserChoice",
    "Loop",
    "LoopChoice",
    "chosen_http_parser",
    "chosen_loop",
    "run_on_loop",
    "running_loop",
]

Loop = Literal["asyncio", "uvloop"]
LoopChoice = Literal["auto", "asyncio", "uvloop"]
HttpParser = Literal["h11", "httptools"]
HttpParserChoice = Literal["auto", "h11", "httptools"]

_INSTALL: Final = 'pip install "adk-mcp-gateway[speed]"'

_T = TypeVar("_T")


def _installed(module: str) -> bool:
    """Whether `module` imports (not merely whether it is on the path: a broken install counts as missing)."""
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def chosen_loop(choice: LoopChoice = "auto") -> Loop:
    """The event loop `choice` means on this machine.

    Raises:
        ConfigError: `uvloop` was asked for and does not import; the message says how to install it.
    """
    if choice == "asyncio":
        return "asyncio"
    if _installed("uvloop"):
        return "uvloop"
    if choice == "uvloop":
        raise ConfigError(
            f"The uvloop event loop was asked for (--loop uvloop) but uvloop is not installed: {_INSTALL}, "
            "or use --loop auto (uvloop when installed) or --loop asyncio."
        )
    return "asyncio"


def chosen_http_parser(choice: HttpParserChoice = "auto") -> HttpParser:
    """The HTTP/1.1 parser `choice` means on this machine.

    Raises:
        ConfigError: `httptools` was asked for and does not import; the message says how to install it.
    """
    if choice == "h11":
        return "h11"
    if _installed("httptools"):
        return "httptools"
    if choice == "httptools":
        raise ConfigError(
            f"The httptools HTTP parser was asked for (--http-parser httptools) but httptools is not installed: "
            f"{_INSTALL}, or use --http-parser auto (httptools when installed) or --http-parser h11."
        )
    return "h11"


def running_loop() -> Loop:
    """The kind of event loop the calling coroutine runs on."""
    return "uvloop" if type(asyncio.get_running_loop()).__module__.startswith("uvloop") else "asyncio"


def run_on_loop(func: Callable[[], Awaitable[_T]], *, loop: LoopChoice = "auto") -> _T:
    """`anyio.run(func)` on the event loop `loop` chooses (`chosen_loop`).

    Raises:
        ConfigError: as `chosen_loop`.
    """
    use_uvloop = chosen_loop(loop) == "uvloop"
    return anyio.run(func, backend="asyncio", backend_options={"use_uvloop": use_uvloop})
