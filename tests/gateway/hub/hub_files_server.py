"""An upstream serving files by `file://` URI as a file server does: the path is percent-decoded and its dot
segments resolved before the lookup (so `file:///public/../secret/key.txt` reads the secret). Over stdio."""

from __future__ import annotations

import posixpath
from typing import Any
from urllib.parse import unquote, urlsplit

import anyio
from mcp import MCPError, types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

FILES = {"/public/readme.txt": "public notes", "/secret/key.txt": "the secret key"}


def _path(uri: str) -> str:
    return posixpath.normpath(unquote(urlsplit(uri).path))


async def list_resources(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListResourcesResult:
    del ctx, params
    return types.ListResourcesResult(resources=[types.Resource(uri=f"file://{path}", name=path) for path in FILES])


async def read_resource(
    ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    del ctx
    path = _path(params.uri)
    if path not in FILES:
        raise MCPError(code=types.INVALID_PARAMS, message=f"No file {path}")
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri=params.uri, text=FILES[path])])


async def subscribe(ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams) -> types.EmptyResult:
    del ctx
    if _path(params.uri) not in FILES:
        raise MCPError(code=types.INVALID_PARAMS, message=f"No file {_path(params.uri)}")
    return types.EmptyResult()


server = Server(
    "files", on_list_resources=list_resources, on_read_resource=read_resource, on_subscribe_resource=subscribe
)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
