"""The HTTP front of a `ToolServer`: streamable HTTP at `/mcp`, SSE at `/sse` + `/messages/`, `GET /healthz`, and
the server card at `/mcp/server-card` (`gateway.server.http.server_card`).

Secure by default: DNS-rebinding protection (Host and Origin must be loopback unless more hosts are allowed),
optional bearer tokens (401 without one; sessions are bound to the token's principal by the SDK's session
manager), and a request-body limit. `/healthz` tells anonymous callers only `ok` or `degraded` (`health`).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncGenerator, Sequence
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qs

import anyio
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.sse import SseServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import Request
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway._write_check import CheckedWriteStream
from gateway.errors import ConfigError, MissingExtraError
from gateway.server.auth.oauth_settings import OAuthSettings
from gateway.server.auth.protected_resource import BearerGuard, resource_metadata_routes
from gateway.server.auth.static_tokens import StaticTokenVerifier
from gateway.server.http._json_rpc_body import parsed_message
from gateway.server.http._refusals import RefusalStatus
from gateway.server.http._request_ids import MalformedIdGuard
from gateway.server.http._stopping_guard import StoppingGuard
from gateway.server.http.health import health_endpoint
from gateway.server.http.host_check import HostCheck
from gateway.server.http.lane import Lane, LaneSeam
from gateway.server.http.server_card import ServerCard, server_card_routes
from gateway.server.http.sessions import DEFAULT_MAX_SESSIONS_PER_CLIENT, DEFAULT_RECLAIM_IDLE_AFTER, HttpSessions
from gateway.server.identity import connection_id
from gateway.server.sign_in.gateway_login import GatewayLogin
from gateway.server.sign_in.link import SignInLinks
from gateway.server.sign_in.secret_entry import ENTRY_PATH, entry_endpoint
from gateway.server.sign_in.sign_ins import CALLBACK_PATH, SignIns
from gateway.server.tool_server import ToolServer

if TYPE_CHECKING:
    from gateway.server.auth.token_verifier import OAuthTokenVerifier

__all__ = ["DEFAULT_MAX_BODY", "DEFAULT_SESSION_IDLE_TIMEOUT", "create_app"]

DEFAULT_MAX_BODY: Final = 4 * 1024 * 1024
DEFAULT_SESSION_IDLE_TIMEOUT: Final = 1800.0
_LOOPBACK_HOSTS: Final = ("127.0.0.1", "localhost", "[::1]")
_MIN_METRICS_TOKEN: Final = 16
_SDK_REFRESH: Final = 60.0
"""At most this many seconds pass between two requests of a session the SDK serves (`LaneSeam.sdk_refresh`)."""
_SESSION_ID: Final = re.compile(rb"session_id=([0-9a-f]{32})")
"""The SSE transport's `endpoint` event names the connection's message URL, `...?session_id=<uuid hex>`."""


def transport_security(allowed_hosts: Sequence[str] = ()) -> TransportSecuritySettings:
    """DNS-rebinding protection: loopback plus `allowed_hosts` (each `host` or `host:port`, any port if bare)."""
    hosts = [*_LOOPBACK_HOSTS, *allowed_hosts]
    with_ports = [h if ":" in h.strip("[]") and not h.startswith("[") else f"{h}:*" for h in hosts]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*hosts, *with_ports],
        allowed_origins=[f"{scheme}://{h}" for h in with_ports for scheme in ("http", "https")]
        + [f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")],
    )


def create_app(
    tool_server: ToolServer,
    *,
    stateless: bool = False,
    json_response: bool = False,
    auth_tokens: dict[str, str] | None = None,
    oauth: OAuthSettings | None = None,
    allowed_hosts: Sequence[str] = (),
    max_body_size: int = DEFAULT_MAX_BODY,
    session_idle_timeout: float = DEFAULT_SESSION_IDLE_TIMEOUT,
    max_sessions_per_client: int = DEFAULT_MAX_SESSIONS_PER_CLIENT,
    reclaim_idle_after: float = DEFAULT_RECLAIM_IDLE_AFTER,
    metrics: bool = False,
    metrics_token: str | None = None,
    metrics_port: int | None = None,
    fast_lane: bool = True,
    lane: Lane | None = None,
) -> Starlette:
    """A Starlette app serving `tool_server` over streamable HTTP and SSE.

    Mount it into another Starlette app with `lifespan=app.router.lifespan_context` (the lifespan starts the
    session manager and closes the tool server).

    Args:
        tool_server: the tools to publish.
        stateless: streamable HTTP without sessions (every POST stands alone; no server→client requests in
            the handshake era).
        json_response: answer POSTs with plain JSON instead of SSE streams.
        auth_tokens: {token: principal}; when given, every MCP request needs `Authorization: Bearer <token>`.
        oauth: act as an OAuth 2.1 resource server: every MCP request needs an access token of this issuer for
            this resource (static `auth_tokens`, if also given, are accepted besides).
        allowed_hosts: host names besides loopback that Host/Origin may name (for a reverse proxy).
        max_body_size: largest accepted request body in bytes (413 above it).
        session_idle_timeout: seconds after which an idle streamable HTTP session is closed (its state deleted).
        max_sessions_per_client: open streamable HTTP sessions plus SSE connections per principal (per client
            address when anonymous); one more gets HTTP 429 naming the limit.
        reclaim_idle_after: a client at its limit first loses its sessions idle at least this many seconds.
        metrics: serve `GET /metrics` (Prometheus text format; `gateway.server.http.metrics`).
        metrics_token: the bearer token `/metrics` requires (None: it answers loopback clients only, or anyone
            reaching its own listener).
        metrics_port: the local port of a listener of its own for `/metrics` (the server is given its socket
            too); there only `/metrics` is served, and `/metrics` only there.
        fast_lane: let a lane answer eligible requests below the SDK's server (the gateway's relays upstream
            `tools/call`, `gateway.hub.forwarding.fast_lane`); never for stateless or JSON-response servers. The
            app's `state.fast_lane` is the lane (None when off or when there is none).
        lane: builds the lane in front of the SDK's streamable HTTP app (`gateway.server.http.lane`); default: the
            extension's (`ServerExtension.lane`), none without an extension.

    Raises:
        ConfigError: a session limit is not positive, or the metrics token is shorter than 16 characters.
        MissingExtraError: `metrics` without `prometheus-client` installed (the `metrics` extra).
    """
    security = transport_security(allowed_hosts)
    manager = StreamableHTTPSessionManager(
        app=tool_server.server,
        json_response=json_response,
        stateless=stateless,
        security_settings=security,
        max_request_body_size=max_body_size,
        session_idle_timeout=session_idle_timeout,
    )
    sessions = HttpSessions(
        tool_server.end_session,
        max_sessions_per_client=max_sessions_per_client,
        reclaim_idle_after=reclaim_idle_after,
        idle_timeout=session_idle_timeout,
        stateless=stateless,
    )
    sse = SseServerTransport("/messages/", security_settings=security, max_request_body_size=max_body_size)
    host_check = HostCheck(security)

    async def handle_sse(scope: Scope, receive: Receive, send: Send) -> None:
        # `connect_sse` answers a bad Host or Origin itself but then raises ValueError, which would reach
        # uvicorn as a crashed request; check first and stop after the answer.
        rejection = await host_check.validate_request(Request(scope, receive), is_post=False)
        if rejection is not None:
            await rejection(scope, receive, send)
            return
        endpoint = _SseEndpoint(send)
        try:
            async with sse.connect_sse(scope, receive, endpoint.send) as (read, write):
                # One message that cannot be serialised fails alone rather than ending the connection.
                checked = CheckedWriteStream(write, "the client")
                await tool_server.server.run(read, checked, tool_server.server.create_initialization_options())
        finally:
            # The connection's requests ran in the POSTs' contexts, so `Server.run`'s wrapper saw none of them:
            # end the session by the key they were served under (its isolated upstream sessions end with it).
            if endpoint.session_id is not None:
                await tool_server.end_session(f"connection:sse-{endpoint.session_id}")

    async def handle_sse_message(scope: Scope, receive: Receive, send: Send) -> None:
        # The SDK runs a request's handler in the context of the task that *posted* it, not of the `/sse`
        # task that runs the connection; so the connection key is set here, from the connection's
        # `session_id` (which the transport checks: an unknown id, or another principal's, gets 404).
        session_id = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("session_id", [""])[0]
        token = connection_id.set(f"sse-{session_id}" if session_id else None)
        try:
            await sse.handle_post_message(scope, receive, send)
        finally:
            connection_id.reset(token)

    healthz = health_endpoint(
        tool_server.upstream_status,
        server_name=tool_server.name,
        host_check=host_check,
        tokens_required=bool(auth_tokens) or oauth is not None,
        loopback_only=not allowed_hosts,
    )

    verifiers: list[TokenVerifier] = []
    if auth_tokens:
        verifiers.append(StaticTokenVerifier(auth_tokens))
    oauth_verifier = None
    if oauth is not None:
        # Imported here: pyjwt and cryptography's X.509 (a few MiB) only for a server that checks OAuth tokens.
        from gateway.server.auth.token_verifier import OAuthTokenVerifier

        oauth_verifier = OAuthTokenVerifier(oauth)
    if oauth_verifier is not None:
        verifiers.append(oauth_verifier)

    def guarded(app: ASGIApp) -> ASGIApp:
        if not verifiers:
            return app
        if oauth is None:
            return BearerGuard(app)
        metadata_url = oauth.resource_metadata_url
        return BearerGuard(app, required_scopes=oauth.required_scopes, resource_metadata_url=metadata_url)

    streamable: ASGIApp = StreamableHTTPASGIApp(manager)
    front: ASGIApp | None = None
    if lane is None and tool_server.extension is not None:
        lane = tool_server.extension.lane
    if fast_lane and not stateless and not json_response and lane is not None:
        # The SDK resets a session's idle timeout only on requests it serves: it serves one now and then.
        refresh = min(session_idle_timeout / 8, _SDK_REFRESH)
        front = lane(LaneSeam(streamable, tool_server, parsed_message, sessions, host_check, sdk_refresh=refresh))
        streamable = front
    routes: list[Route | Mount] = [
        Route("/healthz", healthz, methods=["GET"]),
        *(resource_metadata_routes(oauth, tool_server.name) if oauth is not None else []),
        *server_card_routes(
            ServerCard(
                tool_server.name,
                server_version=tool_server.server.version or "",
                description=tool_server.server.description,
                token_required=bool(verifiers),
                oauth=oauth,
            ),
            host_check,
        ),
        *_metrics_routes(
            tool_server,
            sessions,
            host_check,
            enabled=metrics or metrics_port is not None,
            token=metrics_token,
            port=metrics_port,
        ),
        Route(
            "/mcp",
            guarded(
                host_check.guard(
                    MalformedIdGuard(
                        StoppingGuard(RefusalStatus(sessions.streamable(streamable)), tool_server),
                        max_body_size=max_body_size,
                    )
                )
            ),
            methods=["GET", "POST", "DELETE"],
        ),
        Route("/sse", guarded(_asgi_endpoint(sessions.sse(handle_sse))), methods=["GET"]),
        Mount(
            "/messages/",
            app=guarded(host_check.guard(MalformedIdGuard(handle_sse_message, max_body_size=max_body_size))),
        ),
    ]
    if tool_server.credentials is not None:
        # The browser returning from a sign-in carries no bearer token; the single-use `state` is its credential.
        sign_ins = tool_server.credentials.sign_ins
        _check_sign_ins(sign_ins, oauth, oauth_verifier, static_tokens=bool(auth_tokens))
        routes.append(Route(CALLBACK_PATH, sign_ins.callback, methods=["GET"]))
        routes.append(Route(ENTRY_PATH, entry_endpoint(sign_ins), methods=["GET", "POST"]))
        routes.extend(SignInLinks(sign_ins).routes())
    middleware: list[Middleware] = []
    if verifiers:
        verifier = verifiers[0] if len(verifiers) == 1 else _FirstAccepting(verifiers)
        middleware = [
            Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(verifier)),
            Middleware(AuthContextMiddleware),
        ]
    if metrics_port is not None:
        from gateway.server.http.metrics import MetricsListener

        # Outermost: nothing but /metrics is ever served on the metrics listener, whatever its bind address.
        middleware.insert(0, Middleware(MetricsListener, port=metrics_port))

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncGenerator[None]:
        async with contextlib.AsyncExitStack() as stack:
            if oauth_verifier is not None:
                await stack.enter_async_context(oauth_verifier.running())
            async with tool_server, manager.run(), anyio.create_task_group() as tg:
                tg.start_soon(sessions.run)
                yield
                tg.cancel_scope.cancel()

    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan)
    app.state.fast_lane = front
    return app


def _check_sign_ins(
    sign_ins: SignIns, oauth: OAuthSettings | None, verifier: OAuthTokenVerifier | None, *, static_tokens: bool
) -> None:
    """Tell the sign-ins how a link's page learns whose browser opened it (`gateway.server.sign_in.link`)."""
    if oauth is not None and oauth.sign_in_client is not None and verifier is not None:
        sign_ins.login = GatewayLogin(oauth.sign_in_client, oauth, verifier)
    elif oauth is not None or static_tokens:
        # Several principals, and no way to tell whose a browser is: a link could be finished by anyone it reached.
        sign_ins.unverifiable = (
            "this server cannot verify who opens a sign-in link: it needs its own login client at its "
            "authorization server (auth.signInClient in the config, OAuthSettings.sign_in_client) for that."
        )


class _FirstAccepting:
    """Static tokens and OAuth tokens side by side: the first verifier that accepts a token decides."""

    def __init__(self, verifiers: Sequence[TokenVerifier]) -> None:
        self._verifiers = tuple(verifiers)

    async def verify_token(self, token: str) -> AccessToken | None:
        for verifier in self._verifiers:
            access = await verifier.verify_token(token)
            if access is not None:
                return access
        return None


def _metrics_routes(
    tool_server: ToolServer,
    sessions: HttpSessions,
    host_check: TransportSecurityMiddleware,
    *,
    enabled: bool,
    token: str | None,
    port: int | None,
) -> list[Route]:
    """`GET /metrics`, when enabled (prometheus-client is imported only then)."""
    if not enabled:
        return []
    if token is not None and len(token) < _MIN_METRICS_TOKEN:
        raise ConfigError(
            f"The metrics token is too short ({len(token)} characters); use at least {_MIN_METRICS_TOKEN}, e.g. "
            "the output of `python -c 'import secrets; print(secrets.token_urlsafe())'`."
        )
    try:
        from gateway.server.http.metrics import GatewayMetrics, metrics_endpoint
    except ImportError as exc:
        raise MissingExtraError(
            f'/metrics needs prometheus-client: pip install "adk-mcp-gateway[metrics]" ({exc}).'
        ) from exc
    gathered = GatewayMetrics(tool_server, open_sessions=lambda: sessions.open_count)
    endpoint = metrics_endpoint(gathered, token=token, host_check=host_check, listener_port=port)
    return [Route("/metrics", endpoint, methods=["GET"])]


class _SseEndpoint:
    """An SSE connection's `send`, noting the `session_id` of the `endpoint` event the transport sends first."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.session_id: str | None = None

    async def send(self, message: Message) -> None:
        if self.session_id is None and message["type"] == "http.response.body":
            found = _SESSION_ID.search(message.get("body", b""))
            if found is not None:
                self.session_id = found.group(1).decode("ascii")
        await self._send(message)


class _asgi_endpoint:
    """Wraps an ASGI callable so Starlette's `Route` treats it as an ASGI app rather than a request handler."""

    def __init__(self, app: Any) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app(scope, receive, send)
