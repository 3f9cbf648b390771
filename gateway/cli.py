"""The `adk-mcp-gateway` command line.

Exit codes: 0 success; 1 a runtime failure (an upstream that does not work, a tool call that returned an error);
2 bad usage, configuration or tool reference; 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from importlib.metadata import version
from typing import TYPE_CHECKING, Any, cast

import anyio

from adapters import declaration_to_mcp_tool
from gateway.errors import GatewayError, UpstreamUnavailableError
from gateway.references import load_agent, load_tools
from gateway.tools import BaseTool, ReadonlyContext, ToolConfirmation, ToolContext
from gateway.tools.tool_union import ToolUnion

if TYPE_CHECKING:
    from gateway.config import GatewayConfig

__all__ = ["main"]

logger = logging.getLogger(__name__)

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

_EPILOG = """\
CONFIG is a JSON file in Claude Desktop's format ({"mcpServers": {...}}) plus gateway options; see README.
Tool references (--tools): 'package.module:attr' (a function, tool, toolset or list of them), 'package.module' or
'path/to/file.py' (its __all__, else its public functions).

examples:
  adk-mcp-gateway serve examples/gateway.json                    # stdio, for Claude Desktop
  adk-mcp-gateway serve examples/gateway.json --transport http   # http://127.0.0.1:8000/mcp and /sse
  adk-mcp-gateway serve --tools my_tools.py                      # just local functions
  adk-mcp-gateway serve --agent my_agent:root_agent              # a google-adk agent as one tool
  adk-mcp-gateway tools examples/gateway.json                    # the merged catalog
  adk-mcp-gateway call examples/gateway.json time_get_current_time --args '{"timezone": "UTC"}'
  adk-mcp-gateway check examples/gateway.json                    # is every upstream reachable?
  adk-mcp-gateway login gateway.json docs                        # sign in once to an upstream's OAuth
"""


def _add_sources(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", nargs="?", metavar="CONFIG", help="gateway config file (JSON)")
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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="adk-mcp-gateway",
        description="An MCP gateway: serve Python tools and upstream MCP servers behind one MCP endpoint.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version('adk-mcp-gateway')}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug details to stderr")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = commands.add_parser(
        "serve",
        help="run the gateway (or just local tools) as an MCP server over stdio, SSE or streamable HTTP",
        description="Serve the config's upstreams and local tools, and/or --tools, as one MCP server. stdio is "
        "what Claude Desktop starts; 'http' serves streamable HTTP at /mcp and SSE at /sse on the same port.",
    )
    _add_sources(serve)
    serve.add_argument("--transport", choices=["stdio", "sse", "http"], default="stdio")
    serve.add_argument("--host", default="127.0.0.1", help="interface to bind (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="TCP port (default: 8000)")
    serve.add_argument("--name", help="server name shown to clients (default: the config's, or adk-mcp-gateway)")
    serve.add_argument(
        "--state",
        metavar="PATH|URL",
        help="where session/user/app state lives: a SQLite file, or redis://HOST:PORT/DB to share it between "
        'replicas (default: $ADK_MCP_GATEWAY_STATE, the config\'s "state", '
        "~/.local/state/adk-mcp-gateway/state.db)",
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
    serve.add_argument("--stateless", action="store_true", help="streamable HTTP without sessions")
    serve.add_argument("--json-response", action="store_true", help="plain JSON responses instead of SSE streams")
    serve.add_argument(
        "--max-sessions-per-client",
        type=int,
        metavar="N",
        help="open HTTP sessions + SSE connections per principal, or per address when anonymous "
        "(default: 100); one more gets HTTP 429",
    )
    serve.add_argument(
        "--session-retention",
        type=float,
        metavar="SECONDS",
        help="keep the state of sessions that never end explicitly (_meta session keys) this long after their "
        "last write (default: 30 days)",
    )

    tools = commands.add_parser(
        "tools",
        help="print the merged tool catalog (name, arguments, source, description)",
        description="Connect to every upstream of CONFIG, load the local tools, and print what a client would see.",
    )
    _add_sources(tools)
    tools.add_argument("--json", action="store_true", help="print the tools/list result as JSON instead")

    call = commands.add_parser(
        "call",
        help="call one tool and print its result",
        description="Call one tool of the catalog, showing progress on stderr, and print the result as JSON. "
        "Exits 1 when the tool reports an error.",
    )
    _add_sources(call)
    call.add_argument("tool", metavar="TOOL", help="the tool's name as `tools` lists it")
    call.add_argument("--args", default="{}", metavar="JSON", help="the arguments, e.g. '{\"a\": 1}'")
    call.add_argument("--yes", action="store_true", help="approve a confirmation without asking")

    check = commands.add_parser(
        "check",
        help="validate CONFIG and connect to each upstream, reporting what works",
        description="Validate the config, then connect to every upstream and list its tools. Exits 1 if any fails.",
    )
    check.add_argument("config", metavar="CONFIG", help="gateway config file (JSON)")

    login = commands.add_parser(
        "login",
        help='sign in once to an upstream that needs a user login ("auth": {"type": "oauth"})',
        description="Print the upstream's sign-in URL (and open a browser), wait for the redirect on 127.0.0.1, "
        "and store the tokens (mode 0600, in $ADK_MCP_GATEWAY_TOKEN_DIR or the user's data directory); the gateway "
        "renews them from then on.",
    )
    login.add_argument("config", metavar="CONFIG", help="gateway config file (JSON)")
    login.add_argument("upstream", metavar="UPSTREAM", help="the upstream's key in mcpServers")
    login.add_argument("--no-browser", action="store_true", help="only print the URL")
    login.add_argument("--port", type=int, default=None, help="the redirect listener's port (default: any)")
    return parser


def _sources(args: argparse.Namespace) -> tuple[list[ToolUnion], GatewayConfig | None]:
    """The tool sources that CONFIG and --tools describe, and the config (None without CONFIG)."""
    if not args.config and not args.references and not args.agents:
        raise GatewayError(
            "Give a gateway CONFIG file, local tools with --tools REF, or an ADK agent with --agent MODULE:ATTR."
        )
    items: list[ToolUnion] = []
    config: GatewayConfig | None = None
    if args.config:
        from gateway.config import load_config
        from gateway.hub import gateway_tools

        config = load_config(args.config)
        items.extend(gateway_tools(config))
    for reference in args.references:
        items.extend(load_tools(reference))
    items.extend(load_agent(reference) for reference in args.agents)
    return items, config


async def _catalog(items: list[ToolUnion]) -> list[tuple[BaseTool, str]]:
    from gateway.server import ToolServer
    from gateway.state import InMemoryStateStore

    async with ToolServer(items, state_store=InMemoryStateStore()) as server:
        entries = await server.catalog.resolve(ReadonlyContext())
        return [(entry.tool, entry.source) for entry in entries.values()]


def _print_tools(tools: Sequence[tuple[BaseTool, str]], as_json: bool) -> None:
    described = [
        (declaration_to_mcp_tool(declaration, long_running=tool.is_long_running), source)
        for tool, source in tools
        if (declaration := tool.get_declaration()) is not None
    ]
    if as_json:
        listing = {"tools": [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t, _ in described]}
        print(json.dumps(listing, indent=2, ensure_ascii=False))
        return
    rows = [("NAME", "ARGUMENTS", "SOURCE", "DESCRIPTION")]
    for tool, source in described:
        properties: dict[str, Any] = tool.input_schema.get("properties", {})
        required = set(tool.input_schema.get("required", []))
        arguments = ", ".join(f"{name}{'' if name in required else '?'}" for name in properties)
        summary = (tool.description or "").strip().splitlines()[0] if (tool.description or "").strip() else ""
        rows.append((tool.name, arguments, source, summary))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for name, arguments, source, summary in rows:
        print(f"{name:<{widths[0]}}  {arguments:<{widths[1]}}  {source:<{widths[2]}}  {summary}".rstrip())


async def _call(items: list[ToolUnion], tool_name: str, arguments: dict[str, Any], assume_yes: bool) -> int:
    from gateway.server import ToolServer
    from gateway.state import InMemoryStateStore

    async def show_progress(update: object, /) -> None:
        print(f"progress: {json.dumps(update, default=str)}", file=sys.stderr, flush=True)

    async with ToolServer(items, state_store=InMemoryStateStore()) as server:
        entries = await server.catalog.resolve(ReadonlyContext())
        if tool_name not in entries:
            print(
                f"adk-mcp-gateway: error: no tool {tool_name!r}. Available: {', '.join(sorted(entries))}.",
                file=sys.stderr,
            )
            return EXIT_USAGE
        tool = entries[tool_name].tool
        context = ToolContext(progress_sink=show_progress)
        response = await tool.run_async(args=arguments, tool_context=context)
        requested = context.actions.requested_tool_confirmations.get(context.function_call_id or "")
        if requested is not None:
            if not (assume_yes or _ask(f"Allow {tool_name}({json.dumps(arguments)})? [y/N] ")):
                print(json.dumps({"error": "This tool call is rejected."}))
                return EXIT_FAILURE
            confirmed = ToolConfirmation(hint=requested.hint, confirmed=True, payload=requested.payload)
            context = ToolContext(progress_sink=show_progress, tool_confirmation=confirmed)
            response = await tool.run_async(args=arguments, tool_context=context)
    print(json.dumps(response, indent=2, ensure_ascii=False, default=str))
    return EXIT_FAILURE if isinstance(response, dict) and "error" in response else EXIT_OK


def _ask(question: str) -> bool:
    if not sys.stdin.isatty():
        print("adk-mcp-gateway: this call needs confirmation; pass --yes to approve it.", file=sys.stderr)
        return False
    return input(question).strip().lower() in ("y", "yes")


async def _check(config_path: str) -> int:
    from gateway.config import load_config
    from gateway.hub import UpstreamToolset, gateway_tools
    from gateway.hub.name_check import local_tool_names

    config = load_config(config_path)
    items = gateway_tools(config)
    print(f"config {config_path}: valid ({len(config.enabled_servers())} upstreams, {len(config.tools)} tool refs)")
    failures = 0
    published: list[tuple[str, str]] = []
    for item in items:
        if not isinstance(item, UpstreamToolset):
            continue
        try:
            async with item:
                # `list_mcp_tools` raises for an upstream that does not work; `get_tools` would leave it out.
                await item.list_mcp_tools()
                tools = await item.get_tools_with_prefix()
                session = await item.session()
                print(f"  ok    {item.key}: {len(tools)} tools, protocol {session.client.protocol_version}")
                published.extend((tool.name, item.source_name) for tool in tools)
        except GatewayError as exc:
            failures += 1
            print(f"  FAIL  {item.key}: {exc}")
    local = await local_tool_names([item for item in items if not isinstance(item, UpstreamToolset)])
    print(f"  ok    local tools: {len(local)}")
    published.extend((name, "local") for name in local)
    failures += _report_name_conflicts(published)
    return EXIT_FAILURE if failures else EXIT_OK


def _report_name_conflicts(published: list[tuple[str, str]]) -> int:
    """Print one FAIL line per tool name that two sources publish; returns how many there are."""
    from gateway.hub.name_check import CONFLICT_FIX, name_conflicts

    conflicts = name_conflicts(published)
    for name, where in conflicts.items():
        print(
            f"  FAIL  names: {name!r} is published by {' and '.join(where)}, so serve refuses to start. " + CONFLICT_FIX
        )
    return len(conflicts)


async def _reach_store(location: str) -> None:
    from gateway.state import StateScope
    from gateway.state.location import open_state_store

    store = open_state_store(location)
    try:
        await store.load(StateScope("", "", ""))
    finally:
        await store.aclose()


def _serve(args: argparse.Namespace) -> int:
    from gateway.hub import gateway_server
    from gateway.hub.name_check import check_names_at_start
    from gateway.server import serve
    from gateway.server.auth import TOKENS_ENV, parse_tokens
    from gateway.server.sealing import require_shared_key, sealing_keys
    from gateway.state.location import is_redis, open_state_store, state_location

    items, config = _sources(args)
    anyio.run(check_names_at_start, items)
    name = args.name or (config.name if config else None) or "adk-mcp-gateway"
    location = state_location(args.state, config.state if config else None)
    keys = sealing_keys(config.sealing_key if config else None)
    if args.transport != "stdio":
        require_shared_key(keys, shared_state=is_redis(location))
    if is_redis(location):
        # Fail now, with the store's own message, rather than inside the server's start-up.
        anyio.run(_reach_store, location)
    tool_server = gateway_server(
        items,
        name=name,
        version=version("adk-mcp-gateway"),
        state_store=open_state_store(location),
        request_state_keys=keys,
        **({"session_retention": args.session_retention} if args.session_retention is not None else {}),
    )
    tokens = parse_tokens(args.auth_token) if args.auth_token else None
    loopback = args.host in ("127.0.0.1", "localhost", "::1")
    if args.transport != "stdio" and not loopback and not (tokens or os.environ.get(TOKENS_ENV)):
        logger.warning("Serving on %s without --auth-token: anyone who can reach it can call the tools.", args.host)
    if args.transport != "stdio":
        where = f"http://{args.host}:{args.port}"
        print(f"Serving {name} on {where}/mcp (streamable HTTP) and {where}/sse (SSE); Ctrl-C stops.", file=sys.stderr)
    serve(
        tool_server,
        transport=args.transport,
        host=args.host,
        port=args.port,
        auth_tokens=tokens,
        allowed_hosts=args.allow_host,
        stateless=args.stateless,
        json_response=args.json_response,
        header_timeout=args.header_timeout,
        body_timeout=args.body_timeout,
        **({} if args.max_sessions_per_client is None else {"max_sessions_per_client": args.max_sessions_per_client}),
    )
    return EXIT_OK


def _run(args: argparse.Namespace) -> int:
    if args.command == "serve":
        return _serve(args)
    if args.command == "check":
        return anyio.run(_check, args.config)
    if args.command == "login":
        from gateway.sign_in import sign_in

        return anyio.run(lambda: sign_in(args.config, args.upstream, open_browser=not args.no_browser, port=args.port))
    items, _ = _sources(args)
    if args.command == "tools":
        _print_tools(anyio.run(_catalog, items), args.json)
        return EXIT_OK
    try:
        arguments = json.loads(args.args)
    except json.JSONDecodeError as exc:
        raise GatewayError(f"--args is not valid JSON ({exc.msg} at column {exc.colno}): {args.args}") from exc
    if not isinstance(arguments, dict):
        raise GatewayError(f"--args must be a JSON object such as '{{\"a\": 1}}', got {args.args}")
    call_args = cast("dict[str, Any]", arguments)
    return anyio.run(_call, items, args.tool, call_args, args.yes)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, stream=sys.stderr)
    try:
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


if __name__ == "__main__":
    sys.exit(main())
