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


def _takes_fast(choice: str, *, fast: str, plain: str, what: str, option: str) -> bool:
    """Whether `choice` (`auto`, `fast` or `plain`) means the fast module `fast` on this machine.

    Raises:
        ConfigError: `fast` was asked for and does not import; the message says how to install it.
    """
    if choice == plain:
        return False
    if _installed(fast):
        return True
    if choice == fast:
        raise ConfigError(
            f"The {fast} {what} was asked for ({option} {fast}) but {fast} is not installed: {_INSTALL}, "
            f"or use {option} auto ({fast} when installed) or {option} {plain}."
        )
    return False


def chosen_loop(choice: LoopChoice = "auto") -> Loop:
    """The event loop `choice` means on this machine.

    Raises:
        ConfigError: `uvloop` was asked for and does not import; the message says how to install it.
    """
    fast = _takes_fast(choice, fast="uvloop", plain="asyncio", what="event loop", option="--loop")
    return "uvloop" if fast else "asyncio"


def chosen_http_parser(choice: HttpParserChoice = "auto") -> HttpParser:
    """The HTTP/1.1 parser `choice` means on this machine.

    Raises:
        ConfigError: `httptools` was asked for and does not import; the message says how to install it.
    """
    fast = _takes_fast(choice, fast="httptools", plain="h11", what="HTTP parser", option="--http-parser")
    return "httptools" if fast else "h11"


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
