"""`main`: parse the command line, set up logging, run the command, and turn errors into exit codes."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from typing import Final

import anyio

from gateway.cli._logs import LEVELS, LOG_FORMAT_ENV, LOG_LEVEL_ENV, configure_logging
from gateway.cli._parser import parser
from gateway.errors import GatewayError, UpstreamUnavailableError

__all__ = ["main"]

logger = logging.getLogger(__name__)

EXIT_OK: Final = 0
EXIT_FAILURE: Final = 1
EXIT_USAGE: Final = 2
EXIT_INTERRUPTED: Final = 130


def _setup_logging(args: argparse.Namespace) -> None:
    """Logging as `-v`, `--log-level`, `--log-format` or the environment say (flags win)."""
    level = os.environ.get(LOG_LEVEL_ENV, "").strip().lower() or ("info" if args.command == "serve" else "warning")
    if level not in LEVELS:
        raise GatewayError(f"${LOG_LEVEL_ENV} is {level!r}: set it to one of {', '.join(LEVELS)}.")
    level = "debug" if getattr(args, "verbose", False) else getattr(args, "log_level", level)
    log_format = getattr(args, "log_format", None) or os.environ.get(LOG_FORMAT_ENV, "").strip().lower() or "text"
    if log_format not in ("text", "json"):
        raise GatewayError(f"${LOG_FORMAT_ENV} is {log_format!r}: set it to text or json.")
    # An operator reads tracebacks in a server's log; at a terminal a message says enough unless -v asks for more.
    configure_logging(level, log_format, tracebacks=args.command == "serve" or level == "debug")


def _run(args: argparse.Namespace) -> int:
    if args.command == "serve":
        from gateway.cli._serve import run_serve

        return run_serve(args)
    if args.command == "check":
        from gateway.cli._check import check

        return anyio.run(check, args.config, args.state)
    if args.command == "pins":
        from gateway.cli._pins import run_pins

        return anyio.run(run_pins, args)
    if args.command == "login":
        from gateway.cli._sign_in import sign_in

        return anyio.run(lambda: sign_in(args.config, args.upstream, open_browser=not args.no_browser, port=args.port))
    from gateway.cli._sources import load_sources

    if args.command == "tools":
        from gateway.cli._catalog import catalog, print_tools

        sources = load_sources(args.config, args.references, args.agents)
        print_tools(anyio.run(catalog, sources.items), args.json)
        return EXIT_OK
    from gateway.cli._call import parse_call_words, run_call
    from gateway.cli._terminal import Terminal

    request = parse_call_words(args.words, has_tools=bool(args.references or args.agents))
    sources = load_sources(request.config, args.references, args.agents)
    terminal = Terminal(assume_yes=args.yes, sample_with=args.sample_with)
    return anyio.run(run_call, sources, request, args.args, terminal)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = parser().parse_args(argv)
    # `serve --workers` starts its workers with the same arguments.
    args.argv = list(sys.argv[1:] if argv is None else argv)
    try:
        _setup_logging(args)
        return _run(args)
    except UpstreamUnavailableError as exc:
        print(f"adk-mcp-gateway: error: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except GatewayError as exc:
        print(f"adk-mcp-gateway: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # `adk-mcp-gateway tools ... | head`: the reader left; nothing more to say.
        return EXIT_OK
