"""The upstream every benchmark row measures against: the SDK's `MCPServer` with `echo`, a 1 MiB `blob` and fillers.

Imported, `build(tools)` gives a fresh server (`echo`, `blob`, then `lookup_NN` fillers up to `tools` tools).
Run as a script it serves one: over stdio by default (a gateway's stdio upstream), or with `--http PORT` over
streamable HTTP on 127.0.0.1 (the footprint baseline); `--loop uvloop` runs it on uvloop (and HTTP on httptools),
as `bench.py --loop uvloop` runs everything else.
"""

from __future__ import annotations

import argparse

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer

ONE_MIB = 1024 * 1024
_BLOB = "x" * ONE_MIB


async def echo(text: str) -> str:
    """Return `text` unchanged."""
    return text


async def blob() -> str:
    """Return a 1 MiB string."""
    return _BLOB


async def lookup(query: str, limit: int = 10, exact: bool = False) -> str:
    """Look `query` up in an imaginary index (a filler that gives the catalog realistic schemas).

    Args:
        query: what to look for.
        limit: how many hits at most.
        exact: whether only exact matches count.
    """
    return f"{query}:{limit}:{exact}"


def build(tools: int = 2, *, name: str = "bench-upstream") -> MCPServer:
    """A server with `echo`, `blob` and `tools - 2` fillers named `lookup_NN` (at least the first two)."""
    server = MCPServer(name, log_level="WARNING")
    server.add_tool(echo)
    server.add_tool(blob)
    for index in range(max(0, tools - 2)):
        server.add_tool(lookup, name=f"lookup_{index:03d}", description=f"Filler tool number {index}.")
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tools", type=int, default=2, help="how many tools to publish")
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on 127.0.0.1:PORT")
    parser.add_argument("--loop", choices=["asyncio", "uvloop"], default="asyncio", help="event loop (and parser)")
    args = parser.parse_args()
    server = build(args.tools)
    options = {"use_uvloop": args.loop == "uvloop"}
    if args.http is None:
        anyio.run(server.run_stdio_async, backend_options=options)
        return
    # As `MCPServer.run("streamable-http")`, with the HTTP parser that goes with the loop (uvicorn's "auto" would
    # take httptools whenever it is installed).
    config = uvicorn.Config(
        server.streamable_http_app(host="127.0.0.1"),
        host="127.0.0.1",
        port=args.http,
        log_level="warning",
        http="httptools" if args.loop == "uvloop" else "h11",
    )
    anyio.run(uvicorn.Server(config).serve, backend_options=options)


if __name__ == "__main__":
    main()
