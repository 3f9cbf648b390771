"""The command line's arguments: `serve`, `tools`, `call`, `check`, `pins`, `login`, and the logging flags."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version
from typing import Final

from gateway.cli._access import add_oauth_flags
from gateway.cli._logs import LEVELS, LOG_FORMAT_ENV, LOG_LEVEL_ENV

__all__ = ["HOST_ENV", "PORT_ENV", "parser"]

HOST_ENV: Final = "ADK_MCP_GATEWAY_HOST"
PORT_ENV: Final = "ADK_MCP_GATEWAY_PORT"

_PINS_STATE: Final = "the state store holding the pins (pinTools), as given to serve"

_EPILOG = f"""\
CONFIG is a JSON file in Claude Desktop's format ({{"mcpServers": {{...}}}}) plus gateway options
(docs/gateway/config.md).
Tool references (--tools): 'package.module:attr' (a function, tool, toolset or list of them), 'package.module' or
'path/to/file.py' (its __all__, else its public functions).

environment: {HOST_ENV}, {PORT_ENV} (serve --host/--port), {LOG_LEVEL_ENV} ({"|".join(LEVELS)}),
{LOG_FORMAT_ENV} (text|json), ADK_MCP_GATEWAY_STATE (serve --state), ADK_MCP_GATEWAY_TOKENS (serve --auth-token).

examples:
  adk-mcp-gateway serve examples/gateway.json                    # stdio, for Claude Desktop
  adk-mcp-gateway serve examples/gateway.json --transport http   # http://127.0.0.1:8000/mcp and /sse
  adk-mcp-gateway serve --tools my_tools.py                      # just local functions
  adk-mcp-gateway serve --agent my_agent:root_agent              # a google-adk agent as one tool
  adk-mcp-gateway tools examples/gateway.json                    # the merged catalog
  adk-mcp-gateway call examples/gateway.json time_get_current_time timezone=UTC
  adk-mcp-gateway call --tools examples/functions.py days_between start=2024-01-01 end=2024-03-01
  adk-mcp-gateway check examples/gateway.json                    # is every upstream reachable?
  adk-mcp-gateway login gateway.json docs                        # sign in once to an upstream's OAuth
"""


def _logging_flags() -> argparse.ArgumentParser:
    """The flags every command takes, before or after its name (absent from the result unless given)."""
    flags = argparse.ArgumentParser(add_help=False)
    group = flags.add_argument_group("logging (before or after the command)")
    group.add_argument(
        "-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="log debug details and tracebacks"
    )
    group.add_argument(
        "--log-level",
        type=str.lower,
        choices=LEVELS,
        default=argparse.SUPPRESS,
        help=f"log this much to stderr (default: ${LOG_LEVEL_ENV}, else info for serve and warning otherwise)",
    )
    group.add_argument(
        "--log-format",
        type=str.lower,
        choices=("text", "json"),
        default=argparse.SUPPRESS,
        help=f"text lines, or one JSON object per line (default: ${LOG_FORMAT_ENV}, else text)",
    )
    return flags


def _add_sources(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tools", dest="references", action="append", default=[], metavar="REF", help="local tools (repeatable)"
    )
    parser.add_argument(
        "--agent",
        dest="agents",
        action="append",
        default=[],
        metavar="MODULE:ATTR",
        help="a google-adk agent, published as one tool taking a `request` (repeatable; needs the adk extra)",
    )


def _add_state(parser: argparse.ArgumentParser, what: str) -> None:
    """`--state PATH|URL`, `what` saying what the command keeps or reads there."""
    parser.add_argument(
        "--state",
        metavar="PATH|URL",
        help=f'{what} (default: $ADK_MCP_GATEWAY_STATE, the config\'s "state", '
        "~/.local/state/adk-mcp-gateway/state.db)",
    )


def _serve(serve: argparse.ArgumentParser) -> None:
    serve.add_argument("config", nargs="?", metavar="CONFIG", help="gateway config file (JSON)")
    _add_sources(serve)
    serve.add_argument(
        "--transport",
        choices=["stdio", "sse", "http"],
        default="stdio",
        help="stdio (default: one client, e.g. Claude Desktop, starts the gateway); http or sse: serve streamable "
        "HTTP at /mcp and SSE at /sse on --host/--port (either name serves both)",
    )
    serve.add_argument("--host", help=f"interface to bind (default: ${HOST_ENV}, else 127.0.0.1)")
    serve.add_argument("--port", type=int, help=f"TCP port, 0 for any free one (default: ${PORT_ENV}, else 8000)")
    serve.add_argument("--name", help="server name shown to clients (default: the config's, or adk-mcp-gateway)")
    _add_state(
        serve, "where session/user/app state lives: a SQLite file, or redis://HOST:PORT/DB to share it between replicas"
    )
    serve.add_argument(
        "--auth-token",
        action="append",
        default=[],
        metavar="[USER=]TOKEN",
        help="require this bearer token over HTTP (repeatable; default: $ADK_MCP_GATEWAY_TOKENS)",
    )
    serve.add_argument(
        "--allow-host", action="append", default=[], metavar="HOST", help="accept this Host/Origin besides loopback"
    )
    serve.add_argument(
        "--shutdown-grace",
        type=_non_negative,
        default=10.0,
        metavar="SECONDS",
        help="on Ctrl-C or SIGTERM, time the tool calls in flight get to finish, then they are cancelled (default: 10)",
    )
    serve.add_argument(
        "--header-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="time a client may take to send a request's headers over HTTP (default: 10)",
    )
    serve.add_argument(
        "--body-timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="time a client may take to send a request's body once its headers are in (default: 60)",
    )
    serve.add_argument(
        "--watch",
        action="store_true",
        help="reload CONFIG when it (or a tool file it names) changes; SIGHUP reloads it in any case",
    )
    serve.add_argument("--stateless", action="store_true", help="streamable HTTP without sessions")
    serve.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="run N worker processes on the one HTTP port, sharing state through the store (default: 1); "
        "with more than one, streamable HTTP is served without sessions (as --stateless)",
    )
    serve.add_argument("--worker-fd", type=int, help=argparse.SUPPRESS)
    serve.add_argument("--worker-of", type=int, help=argparse.SUPPRESS)
    serve.add_argument("--json-response", action="store_true", help="plain JSON responses instead of SSE streams")
    serve.add_argument(
        "--loop",
        choices=["auto", "asyncio", "uvloop"],
        default="auto",
        help="event loop: uvloop when the speed extra is installed, else asyncio's (default: auto)",
    )
    serve.add_argument(
        "--http-parser",
        choices=["auto", "h11", "httptools"],
        default="auto",
        help="HTTP/1.1 parser: httptools when the speed extra is installed, else h11 (default: auto)",
    )
    serve.add_argument(
        "--max-sessions-per-client",
        type=int,
        metavar="N",
        help="open HTTP sessions + SSE connections per principal, or per address when anonymous "
        "(default: 100); one more gets HTTP 429",
    )
    serve.add_argument(
        "--metrics",
        action="store_true",
        help="serve Prometheus metrics at GET /metrics over HTTP (loopback clients only, unless a metrics token "
        "is set in $ADK_MCP_GATEWAY_METRICS_TOKEN)",
    )
    serve.add_argument(
        "--metrics-port",
        type=int,
        metavar="PORT",
        help="serve /metrics on a listener of its own (implies --metrics; only /metrics is served there, and no "
        "longer on the MCP port; whoever can connect may scrape unless a metrics token is set)",
    )
    serve.add_argument(
        "--metrics-host", default="127.0.0.1", metavar="HOST", help="interface of --metrics-port (default: 127.0.0.1)"
    )
    serve.add_argument(
        "--session-retention",
        type=float,
        metavar="SECONDS",
        help="keep the state of sessions that never end explicitly (_meta session keys) this long after their "
        "last write (default: 30 days)",
    )
    add_oauth_flags(serve)


def _tools(tools: argparse.ArgumentParser) -> None:
    tools.add_argument("config", nargs="?", metavar="CONFIG", help="gateway config file (JSON)")
    _add_sources(tools)
    tools.add_argument("--json", action="store_true", help="print the tools/list result as JSON instead")


def _call(call: argparse.ArgumentParser) -> None:
    call.add_argument(
        "words",
        nargs="+",
        metavar="[CONFIG] TOOL [KEY=VALUE ...]",
        help="the config (omit it with --tools/--agent), the tool's name as `tools` lists it, and its arguments as "
        "key=value (converted to the types the tool's schema asks for; a JSON value for lists and objects)",
    )
    _add_sources(call)
    call.add_argument("--args", metavar="JSON", help="the arguments as a JSON object, e.g. '{\"a\": 1}'")
    call.add_argument("--yes", action="store_true", help="approve a confirmation without asking")
    call.add_argument(
        "--sample-with",
        metavar="COMMAND",
        help="answer a tool's sampling request (an LLM completion) by running COMMAND with the conversation on "
        "its stdin and taking its stdout as the reply (default: refuse sampling)",
    )


def _check(check: argparse.ArgumentParser) -> None:
    check.add_argument("config", metavar="CONFIG", help="gateway config file (JSON)")
    _add_state(check, _PINS_STATE)


def _pins(pins: argparse.ArgumentParser) -> None:
    pins.add_argument("words", nargs="+", metavar="[approve] CONFIG [TOOL]")
    _add_state(pins, _PINS_STATE)


def _login(login: argparse.ArgumentParser) -> None:
    login.add_argument("config", metavar="CONFIG", help="gateway config file (JSON)")
    login.add_argument("upstream", metavar="UPSTREAM", help="the upstream's key in mcpServers")
    login.add_argument("--no-browser", action="store_true", help="only print the URL")
    login.add_argument("--port", type=int, default=None, help="the redirect listener's port (default: any)")


@dataclass(frozen=True)
class _Command:
    """A subcommand: its help line, its description, and what adds its own arguments."""

    help: str
    description: str
    arguments: Callable[[argparse.ArgumentParser], None]
    usage: str | None = None


_COMMANDS: Final = {
    "serve": _Command(
        "run the gateway (or just local tools) as an MCP server over stdio, SSE or streamable HTTP",
        "Serve the config's upstreams and local tools, and/or --tools, as one MCP server. stdio is what Claude "
        "Desktop starts; 'http' serves streamable HTTP at /mcp and SSE at /sse on the same port.",
        _serve,
    ),
    "tools": _Command(
        "print the merged tool catalog (name, arguments, source, description)",
        "Connect to every upstream of CONFIG, load the local tools, and print what a client would see.",
        _tools,
    ),
    "call": _Command(
        "call one tool and print its result",
        "Call one tool, starting only the upstream that owns it, and print the result as JSON. Progress goes to "
        "stderr; a tool that asks the user (elicitation) asks on the terminal. Exits 1 when the tool reports an "
        "error.",
        _call,
        usage="%(prog)s [CONFIG] TOOL [KEY=VALUE ...] [--args JSON] [--tools REF] [--yes]",
    ),
    "check": _Command(
        "validate CONFIG and connect to each upstream, reporting what works",
        "Validate the config, then connect to every upstream and list its tools. Exits 1 if any fails.",
        _check,
    ),
    "pins": _Command(
        "show drifted tool definitions (pinTools) as diffs; 'pins approve CONFIG [TOOL]' accepts them",
        "Compare each pinned upstream tool's definition with the approved one and print every drift as a unified "
        "diff (exit 1 if any). 'pins approve CONFIG TOOL' approves one tool's current definition; 'pins approve "
        "CONFIG' approves every drifted and every not yet pinned tool.",
        _pins,
    ),
    "login": _Command(
        'sign in once to an upstream that needs a user login ("auth": {"type": "oauth"})',
        "Print the upstream's sign-in URL (and open a browser), wait for the redirect on 127.0.0.1, and store the "
        "tokens (mode 0600, in $ADK_MCP_GATEWAY_TOKEN_DIR or the user's data directory); the gateway renews them "
        "from then on.",
        _login,
    ),
}


def parser() -> argparse.ArgumentParser:
    """The `adk-mcp-gateway` argument parser."""
    flags = _logging_flags()
    main = argparse.ArgumentParser(
        prog="adk-mcp-gateway",
        description="An MCP gateway: serve Python tools and upstream MCP servers behind one MCP endpoint.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[flags],
    )
    main.add_argument("--version", action="version", version=f"%(prog)s {version('adk-mcp-gateway')}")
    commands = main.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, command in _COMMANDS.items():
        command.arguments(
            commands.add_parser(
                name, parents=[flags], help=command.help, description=command.description, usage=command.usage
            )
        )
    return main


def _non_negative(text: str) -> float:
    """A number of seconds, 0 or more (argparse type)."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (0 or more)")
    return seconds
