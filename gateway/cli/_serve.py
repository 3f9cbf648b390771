"""`adk-mcp-gateway serve`: the gateway (or just local tools) as an MCP server."""

from __future__ import annotations

import argparse
import logging
import os
from importlib.metadata import version

import anyio

from gateway.cli._parser import HOST_ENV, PORT_ENV
from gateway.cli._sources import load_sources
from gateway.errors import GatewayError

__all__ = ["run_serve"]

logger = logging.getLogger(__name__)

_DEFAULT_HOST = "127.0.0.1"
_DEFAULT_PORT = 8000
_MAX_PORT = 65535


def _port(args: argparse.Namespace) -> int:
    if args.port is not None:
        return int(args.port)
    text = os.environ.get(PORT_ENV)
    if text is None:
        return _DEFAULT_PORT
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= _MAX_PORT:
        raise GatewayError(f"${PORT_ENV} is {text!r}: set it to a port number (0 to {_MAX_PORT}), or pass --port.")
    return port


async def _reach_store(location: str) -> None:
    from gateway.state import StateScope
    from gateway.state.location import open_state_store

    store = open_state_store(location)
    try:
        await store.load(StateScope("", "", ""))
    finally:
        await store.aclose()


def run_serve(args: argparse.Namespace) -> int:
    """Serve until the client disconnects (stdio) or the process is interrupted (HTTP); returns the exit code."""
    from gateway.access_config import policy_of
    from gateway.cli._access import oauth_settings
    from gateway.hub import gateway_server
    from gateway.hub.name_check import check_names_at_start
    from gateway.server import serve
    from gateway.server.auth import TOKENS_ENV, parse_tokens
    from gateway.server.sealing import require_shared_key, sealing_keys
    from gateway.server.tracing import configure_tracing
    from gateway.state.location import is_redis, open_state_store, state_location

    host = args.host or os.environ.get(HOST_ENV) or _DEFAULT_HOST
    port = _port(args)
    sources = load_sources(args.config, args.references, args.agents)
    config = sources.config
    anyio.run(check_names_at_start, sources.items)
    name = args.name or sources.name or "adk-mcp-gateway"
    configure_tracing(name)
    location = state_location(args.state, config.state if config else None)
    keys = sealing_keys(config.sealing_key if config else None)
    if args.transport != "stdio":
        require_shared_key(keys, shared_state=is_redis(location))
    if is_redis(location):
        # Fail now, with the store's own message, rather than inside the server's start-up.
        anyio.run(_reach_store, location)
    tool_server = gateway_server(
        sources.items,
        name=name,
        version=version("adk-mcp-gateway"),
        state_store=open_state_store(location),
        request_state_keys=keys,
        policy=policy_of(config.policies) if config else None,
        **({"session_retention": args.session_retention} if args.session_retention is not None else {}),
    )
    tokens = parse_tokens(args.auth_token) if args.auth_token else None
    oauth = oauth_settings(args, config, host, port)
    loopback = host in ("127.0.0.1", "localhost", "::1")
    if args.transport != "stdio" and not loopback and not (tokens or oauth or os.environ.get(TOKENS_ENV)):
        logger.warning("Serving on %s without --auth-token: anyone who can reach it can call the tools.", host)
    serve(
        tool_server,
        transport=args.transport,
        host=host,
        port=port,
        auth_tokens=tokens,
        oauth=oauth,
        allowed_hosts=args.allow_host,
        stateless=args.stateless,
        json_response=args.json_response,
        header_timeout=args.header_timeout,
        body_timeout=args.body_timeout,
        metrics=args.metrics,
        **({} if args.max_sessions_per_client is None else {"max_sessions_per_client": args.max_sessions_per_client}),
    )
    return 0
