"""`adk-mcp-gateway call`: one tool call, starting only the source that owns the tool.

The call goes through the gateway's own MCP server in this process, with the terminal as its client
(`Terminal`): upstream elicitation, confirmations and sampling reach the person at the terminal exactly as they
would reach Claude Desktop, and a tool's exception comes back as its message in an error result.
"""

from __future__ import annotations

import contextlib
import json
import sys
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from mcp import Client, MCPError, types

from adapters import mcp_result_to_response
from gateway.cli._arguments import call_arguments
from gateway.cli._sources import Sources
from gateway.cli._terminal import Terminal
from gateway.errors import ToolNotFoundError
from gateway.tools import ReadonlyContext

__all__ = ["CallRequest", "parse_call_words", "run_call"]


@dataclass(frozen=True)
class CallRequest:
    """What `call` was asked: the config (if any), the tool, and its arguments as typed."""

    config: str | None
    tool: str
    pairs: list[str]


def parse_call_words(words: Sequence[str], *, has_tools: bool) -> CallRequest:
    """Split `[CONFIG] TOOL [KEY=VALUE ...]`: without --tools/--agent the first word is the config; with them, it
    is a config only if it names a `.json` file.

    Raises:
        ToolNotFoundError: no tool name was given.
    """
    rest = list(words)
    config: str | None = None
    if rest and (not has_tools or (rest[0].endswith(".json") and "=" not in rest[0])):
        config = rest.pop(0)
    if not rest or "=" in rest[0]:
        raise ToolNotFoundError(
            "Name the tool to call: adk-mcp-gateway call [CONFIG] TOOL [KEY=VALUE ...] (`tools` lists them)."
        )
    return CallRequest(config, rest[0], rest[1:])


async def run_call(sources: Sources, request: CallRequest, args_json: str | None, terminal: Terminal) -> int:
    """Call the tool, print its result as JSON; returns 0, or 1 if the tool reported an error.

    Raises:
        ToolNotFoundError: no source publishes the tool (the message lists the tools that exist).
        UpstreamUnavailableError: the tool's upstream cannot be started or reached.
        GatewayError: an argument does not fit the tool's schema.
    """
    from gateway.hub import gateway_server
    from gateway.server.identity import DEFAULT_PRINCIPAL, connection_id, connection_session_key
    from gateway.state import InMemoryStateStore

    connection = uuid.uuid4().hex
    token = connection_id.set(connection)
    try:
        # The upstreams' instructions are no use to a terminal, and reading them would start every upstream.
        server = gateway_server(
            sources.items, name=sources.name or "adk-mcp-gateway", state_store=InMemoryStateStore(), handshakes=False
        )
        async with server:
            # The context of the connection below: the owner of the tool starts once, for both the lookup and the call.
            readonly = ReadonlyContext(
                app_name=server.name, user_id=DEFAULT_PRINCIPAL, session_id=connection_session_key(connection)
            )
            try:
                entry = await server.catalog.find(request.tool, readonly)
            except ToolNotFoundError:
                names = sorted(await server.catalog.resolve(readonly))
                raise ToolNotFoundError(
                    f"No tool {request.tool!r}. Available: {', '.join(names) or '(none)'}."
                ) from None
            arguments = call_arguments(request.pairs, args_json, entry.mcp_tool.input_schema)
            async with Client(
                server.server,
                mode="legacy",
                elicitation_callback=terminal.elicit,
                sampling_callback=terminal.sample,
            ) as client:
                # A tool's own print() must not mix with the result on stdout.
                with contextlib.redirect_stdout(sys.stderr):
                    try:
                        # Sent as a plain request: `call_tool` would list every tool first (to check the result
                        # against its output schema), starting every upstream; the gateway checked it already.
                        call = types.CallToolRequest(
                            params=types.CallToolRequestParams(name=request.tool, arguments=arguments)
                        )
                        result = await client.session.send_request(
                            call, types.CallToolResult, progress_callback=terminal.progress
                        )
                    except MCPError as exc:
                        result = exc
    finally:
        connection_id.reset(token)
    if isinstance(result, MCPError):
        print(json.dumps({"error": result.error.message}, indent=2, ensure_ascii=False))
        return 1
    print(json.dumps(mcp_result_to_response(result), indent=2, ensure_ascii=False, default=str))
    return 1 if result.is_error else 0
