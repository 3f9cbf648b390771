"""`adk-mcp-gateway serve`: the gateway (or just local tools) as an MCP server."""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import signal
import socket
import sys
from functools import partial
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

import anyio

from gateway.cli._parser import HOST_ENV, PORT_ENV
from gateway.cli._sources import load_sources
from gateway.errors import ConfigError, GatewayError, MissingExtraError

if TYPE_CHECKING:
    from gateway.tools.tool_union import ToolUnion

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


def _check_workers(args: argparse.Namespace, location: str) -> None:
    """Refuse `--workers` where the workers could not share a port or state; warn where SQLite may not be safe."""
    from gateway.state.location import SQLITE_IN_MEMORY, is_redis, network_filesystem

    if args.workers < 1:
        raise ConfigError(f"--workers must be at least 1, got {args.workers}.")
    if args.transport != "http":
        raise ConfigError(
            f"--workers needs --transport http: {args.transport} serves one client per process "
            "(and an SSE connection's stream and posts must reach one process)."
        )
    if location == SQLITE_IN_MEMORY:
        raise ConfigError(
            f"--workers {args.workers} with --state {SQLITE_IN_MEMORY}: each worker would keep its own state in "
            "its memory. Use a SQLite file or a redis:// URL."
        )
    filesystem = None if is_redis(location) else network_filesystem(location)
    if filesystem is not None and args.worker_fd is None:
        logger.warning(
            "The state file %s is on a network filesystem (%s), where SQLite's locking between processes is not "
            "reliable; with --workers use a local file or a redis:// URL.",
            location,
            filesystem,
        )


def _supervise(args: argparse.Namespace, sock: socket.socket, keys: list[str] | None) -> int:
    """Run `args.workers` workers on the bound `sock` until a signal (`gateway.server.http.workers`)."""
    from gateway.server.http.workers import supervise
    from gateway.server.sealing import SEALING_KEY_ENV

    env = dict(os.environ)
    if keys is None:
        # One machine, one supervisor: its workers share a key made here.
        env[SEALING_KEY_ENV] = secrets.token_urlsafe(32)
    with sock:
        bound_host, bound_port = sock.getsockname()[:2]
        logger.info(
            "Serving on http://%s:%s/mcp (streamable HTTP, without sessions) with %d workers; Ctrl-C stops.",
            bound_host,
            bound_port,
            args.workers,
        )
        command = [sys.executable, "-m", "gateway.cli", *args.argv]
        run = partial(supervise, reloads=args.config is not None, grace=args.shutdown_grace)
        return anyio.run(run, command, sock, args.workers, env)


def _warn_exposed(host: str, *, authenticated: bool, allowed: list[str]) -> None:
    """Say what serving on a non-loopback interface needs: a token, and the names clients reach it by."""
    if not authenticated:
        logger.warning(
            "Serving on %s without --auth-token: anyone who can reach it can call the tools. Require a token with "
            "--auth-token USER=TOKEN (or $ADK_MCP_GATEWAY_TOKENS).",
            host,
        )
    if not allowed:
        logger.warning(
            "Serving on %s, but only requests naming a loopback host (Host/Origin) are accepted: clients that reach "
            "it by another name or address get 421. Add --allow-host NAME for each name or address they use.",
            host,
        )


def _require_metrics_extra() -> None:
    try:
        import gateway.server.http.metrics  # noqa: F401  # pyright: ignore[reportUnusedImport]
    except ImportError as exc:
        raise MissingExtraError(
            f'--metrics needs prometheus-client: pip install "adk-mcp-gateway[metrics]" ({exc}).'
        ) from exc


def _bind(args: argparse.Namespace, host: str, port: int) -> dict[str, socket.socket]:
    """The listening sockets `serve` takes (`sock`, and `metrics_sock` with --metrics-port), bound now."""
    from gateway.server.http._runner import listen

    sockets = {"sock": listen(host, port)}
    if args.metrics_port is not None and args.workers <= 1:
        try:
            sockets["metrics_sock"] = listen(args.metrics_host, args.metrics_port)
        except ConfigError:
            sockets["sock"].close()
            raise
    return sockets


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
    from gateway.cli._access import oauth_settings
    from gateway.config import load_config
    from gateway.config.access import policy_of
    from gateway.hub import gateway_server
    from gateway.hub.name_check import check_names_at_start
    from gateway.hub.reloader import reloading_gateway_server
    from gateway.server import serve
    from gateway.server.auth.static_tokens import TOKENS_ENV, parse_tokens
    from gateway.server.http.event_loop import chosen_http_parser, chosen_loop
    from gateway.server.observe.tracing import configure_tracing
    from gateway.server.sealing import require_shared_key, sealing_keys
    from gateway.state.location import is_redis, open_state_store, state_location

    host = args.host or os.environ.get(HOST_ENV) or _DEFAULT_HOST
    port = _port(args)
    if args.watch and not args.config:
        raise GatewayError("--watch reloads a CONFIG file; give one (serve CONFIG --watch).")
    # Refused before anything starts when the speed extra is asked for and missing.
    chosen_loop(args.loop)
    if args.transport != "stdio":
        chosen_http_parser(args.http_parser)
    config = load_config(args.config) if args.config else None
    worker = args.worker_fd is not None
    if args.workers > 1 and (args.metrics or args.metrics_port is not None):
        raise GatewayError(
            "--metrics cannot be combined with --workers: each worker would count only its own requests (and a "
            "scrape reach one of them). Run replicas as separate processes, each with its own --metrics-port."
        )
    if worker:
        from gateway.server.http.workers import die_with_supervisor

        die_with_supervisor(args.worker_of)
    name = args.name or (config.name if config else None) or "adk-mcp-gateway"
    configure_tracing(name)
    location = state_location(args.state, config.state if config else None)
    keys = sealing_keys(config.sealing_key if config else None)
    if args.transport != "stdio":
        require_shared_key(keys, shared_state=is_redis(location))
    if args.workers != 1 or worker:
        _check_workers(args, location)
    if is_redis(location) and not worker:
        # Fail now, with the store's own message, rather than inside the server's start-up.
        anyio.run(_reach_store, location)
    # A missing extra or a taken port is said now, not after every upstream has started (seconds, for npx servers).
    if args.transport != "stdio" and (args.metrics or args.metrics_port is not None):
        _require_metrics_extra()
    sockets = _bind(args, host, port) if args.transport != "stdio" and not worker else {}
    if args.workers > 1 and not worker:
        anyio.run(check_names_at_start, load_sources(args.config, args.references, args.agents).items)
        return _supervise(args, sockets["sock"], keys)
    options: dict[str, Any] = {
        "name": name,
        "version": version("adk-mcp-gateway"),
        "state_store": open_state_store(location),
        "request_state_keys": keys,
        "policy": policy_of(config.policies) if config else None,
        "tool_search": config.tool_search.settings() if config and config.tool_search else None,
    }
    if config is not None:
        options["max_artifact_bytes"] = config.max_artifact_bytes
    if args.session_retention is not None:
        options["session_retention"] = args.session_retention
    if config is not None and config.memory:
        from gateway.config.memory_choice import memory_service_from_config

        options["memory_service"] = memory_service_from_config(config.memory, config.base)
    if config is not None:
        # A config is read again on SIGHUP (and, with --watch, when its files change): `gateway.hub.reloader`.
        # Until the reloader listens, a SIGHUP (one a supervisor passes on to a starting worker) is ignored, not fatal.
        if hasattr(signal, "SIGHUP"):
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
        extra = load_sources(None, args.references, args.agents).items if args.references or args.agents else []
        tool_server = reloading_gateway_server(config, extra_tools=extra, watch=args.watch, **options)
        served: list[ToolUnion] = [*tool_server.catalog.items]
    else:
        served = load_sources(None, args.references, args.agents).items
        tool_server = gateway_server(served, **options)
    if not worker:
        anyio.run(check_names_at_start, served)
    tokens = parse_tokens(args.auth_token) if args.auth_token else None
    oauth = oauth_settings(args, config, host, port)
    loopback = host in ("127.0.0.1", "localhost", "::1")
    if args.transport != "stdio" and not loopback:
        _warn_exposed(host, authenticated=bool(tokens or oauth or os.environ.get(TOKENS_ENV)), allowed=args.allow_host)
    serve(
        tool_server,
        transport=args.transport,
        host=host,
        port=port,
        **({"sock": socket.socket(fileno=args.worker_fd)} if worker else sockets),
        auth_tokens=tokens,
        oauth=oauth,
        allowed_hosts=args.allow_host,
        stateless=args.stateless or worker,
        json_response=args.json_response,
        loop=args.loop,
        http_parser=args.http_parser,
        header_timeout=args.header_timeout,
        body_timeout=args.body_timeout,
        shutdown_grace=args.shutdown_grace,
        metrics=args.metrics,
        metrics_host=args.metrics_host,
        metrics_port=args.metrics_port,
        **({} if args.max_sessions_per_client is None else {"max_sessions_per_client": args.max_sessions_per_client}),
    )
    return 0
