"""The `adk-mcp-gateway` command line.

Exit codes: 0 success; 1 runtime failure; 2 bad usage, configuration or tool reference; 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from importlib.metadata import version

import anyio

from adapters import declaration_to_mcp_tool
from gateway.errors import GatewayError
from gateway.references import load_tools
from gateway.tools import BaseTool, BaseToolset, ReadonlyContext

__all__ = ["main"]

logger = logging.getLogger(__name__)

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="adk-mcp-gateway",
        description="Bridge ADK-style Python tools and the Model Context Protocol.",
        epilog="Tool references: 'package.module:attr' (a function, tool, toolset or list of them), "
        "'package.module' or 'path/to/file.py' (its __all__, else its public functions).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version('adk-mcp-gateway')}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug details to stderr")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    tools = commands.add_parser(
        "tools",
        help="list the MCP tools that Python functions would be published as",
        description="Load tool references and print the MCP tools they become (name, arguments, description).",
    )
    tools.add_argument("--tools", dest="references", action="append", required=True, metavar="REF", help="repeatable")
    tools.add_argument("--json", action="store_true", help="print the tools/list result as JSON instead")

    serve = commands.add_parser(
        "serve",
        help="publish Python functions as an MCP server (stdio, SSE or streamable HTTP)",
        description="Publish the tools that references name as an MCP server. stdio is what Claude Desktop "
        "starts; 'http' serves streamable HTTP at /mcp and SSE at /sse on the same port.",
    )
    serve.add_argument("--tools", dest="references", action="append", required=True, metavar="REF", help="repeatable")
    serve.add_argument("--transport", choices=["stdio", "sse", "http"], default="stdio")
    serve.add_argument("--host", default="127.0.0.1", help="interface to bind (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="TCP port (default: 8000)")
    serve.add_argument("--name", default="adk-mcp-gateway", help="server name shown to clients")
    serve.add_argument(
        "--state",
        metavar="PATH",
        help="SQLite file for session/user/app state (default: $ADK_MCP_GATEWAY_STATE or "
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
    serve.add_argument("--stateless", action="store_true", help="streamable HTTP without sessions")
    serve.add_argument("--json-response", action="store_true", help="plain JSON responses instead of SSE streams")
    return parser


async def _collect(references: Sequence[str]) -> list[BaseTool]:
    tools: list[BaseTool] = []
    for reference in references:
        for item in load_tools(reference):
            if isinstance(item, BaseToolset):
                tools.extend(await item.get_tools_with_prefix(ReadonlyContext()))
                await item.close()
            else:
                tools.append(item)
    return tools


def _print_tools(tools: Sequence[BaseTool], as_json: bool) -> None:
    mcp_tools = [
        declaration_to_mcp_tool(declaration, long_running=tool.is_long_running)
        for tool in tools
        if (declaration := tool.get_declaration()) is not None
    ]
    if as_json:
        listing = {"tools": [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in mcp_tools]}
        print(json.dumps(listing, indent=2, ensure_ascii=False))
        return
    rows = [("NAME", "ARGUMENTS", "DESCRIPTION")]
    for tool in mcp_tools:
        properties = tool.input_schema.get("properties", {})
        required = set(tool.input_schema.get("required", []))
        arguments = ", ".join(f"{name}{'' if name in required else '?'}" for name in properties)
        summary = (tool.description or "").strip().splitlines()[0] if tool.description else ""
        rows.append((tool.name, arguments, summary))
    widths = [max(len(row[i]) for row in rows) for i in range(2)]
    for name, arguments, summary in rows:
        print(f"{name:<{widths[0]}}  {arguments:<{widths[1]}}  {summary}".rstrip())


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, stream=sys.stderr)
    try:
        if args.command == "tools":
            tools = anyio.run(_collect, args.references)
            _print_tools(tools, args.json)
        elif args.command == "serve":
            return _serve(args)
    except GatewayError as exc:
        print(f"adk-mcp-gateway: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return EXIT_OK


def _serve(args: argparse.Namespace) -> int:
    from gateway.server import ToolServer, serve
    from gateway.server.auth import TOKENS_ENV, parse_tokens
    from gateway.state import SqliteStateStore
    from gateway.state.sqlite_store import default_state_path

    items = [item for reference in args.references for item in load_tools(reference)]
    store = SqliteStateStore(args.state or default_state_path())
    tool_server = ToolServer(items, name=args.name, version=version("adk-mcp-gateway"), state_store=store)
    tokens = parse_tokens(args.auth_token) if args.auth_token else None
    loopback = args.host in ("127.0.0.1", "localhost", "::1")
    if args.transport != "stdio" and not loopback and not (tokens or os.environ.get(TOKENS_ENV)):
        logger.warning("Serving on %s without --auth-token: anyone who can reach it can call the tools.", args.host)
    if args.transport != "stdio":
        where = f"http://{args.host}:{args.port}"
        print(
            f"Serving {args.name} on {where}/mcp (streamable HTTP) and {where}/sse (SSE); Ctrl-C stops.",
            file=sys.stderr,
        )
    serve(
        tool_server,
        transport=args.transport,
        host=args.host,
        port=args.port,
        auth_tokens=tokens,
        allowed_hosts=args.allow_host,
        stateless=args.stateless,
        json_response=args.json_response,
    )
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
