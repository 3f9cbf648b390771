"""`GET /healthz`: whether the server is well, for anyone who may reach it; why not, only for those who may know.

* Every request passes the same Host/Origin check as `/mcp` (DNS-rebinding protection).
* Anyone gets the status alone: `{"status": "ok"}` with HTTP 200, or `{"status": "degraded"}` with 503 when an
  upstream is failing (what a load balancer or a container probe needs).
* The details (server name, the event loop it runs on, each upstream's state, session count and failure reason)
  go to a caller with a valid bearer token, or, on a server that needs no token and serves only loopback (no
  `--allow-host`), to loopback callers: there, anyone who can reach the server can call its tools anyway.
* Failure reasons never show what a config may hide secrets in: an upstream's arguments, environment, headers
  and token are replaced by `***`, and URLs are cut down to scheme, host and port.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Final, cast

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.transport_security import TransportSecurityMiddleware
from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from gateway.server.http.event_loop import running_loop

__all__ = ["health_endpoint", "redact_reason"]

_HIDDEN: Final = "***"
_URL: Final = re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]*)://([^\s/'\"<>?#]+)([^\s'\"<>]*)")
_NOT_SECRET: Final = frozenset({"command", "url", "cwd"})
"""Connection fields shown as they are (a URL is still cut down)."""
_MIN_SHOWN_PART: Final = 6
"""Single arguments shorter than this are left alone (`-m`, `--port`) unless the whole command line is quoted."""
_LOOPBACK_CLIENTS: Final = frozenset({"127.0.0.1", "::1", "localhost"})


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in cast("Mapping[Any, Any]", value).values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in cast("Iterable[Any]", value):
            yield from _strings(item)


def _secrets(connection: BaseModel) -> list[str]:
    """What to hide from a failure reason: every argument, environment value, header value and token."""
    found: list[str] = []
    for name, value in connection.model_dump().items():
        if name in _NOT_SECRET or value is None:
            continue
        if isinstance(value, list) and value:
            parts = list(_strings(value))
            found.append(" ".join(parts))
            found.extend(part for part in parts if len(part) >= _MIN_SHOWN_PART)
        else:
            found.extend(part for part in _strings(value) if part)
    # Longest first, so that a whole command line goes before the arguments inside it.
    return sorted(set(found), key=len, reverse=True)


def _origin(match: re.Match[str]) -> str:
    scheme, authority, rest = match.group(1), match.group(2), match.group(3)
    host = authority.rpartition("@")[2]
    path = rest.rstrip(".,:;)")  # the sentence's punctuation after a URL stays
    return f"{scheme}://{host}" + ("/" + _HIDDEN if path.strip("/") else path) + rest[len(path) :]


def redact_reason(reason: str, connection: BaseModel) -> str:
    """A failure reason without the connection's secrets: arguments, environment, headers, tokens, URL paths."""
    for secret in _secrets(connection):
        reason = reason.replace(secret, _HIDDEN)
    return _URL.sub(_origin, reason)


def health_endpoint(
    upstream_status: Callable[[], Mapping[str, Mapping[str, Any]]],
    *,
    server_name: str,
    host_check: TransportSecurityMiddleware,
    tokens_required: bool,
    loopback_only: bool,
) -> Callable[[Request], Awaitable[Response]]:
    """The `/healthz` handler (see the module docstring for who sees what).

    Args:
        upstream_status: each upstream's report (its reason already redacted), by name.
        server_name: shown with the details.
        host_check: the Host/Origin check of the MCP endpoints.
        tokens_required: the server requires a bearer token for MCP requests.
        loopback_only: the server accepts only loopback Host names (no extra hosts allowed).
    """

    def may_see_details(request: Request) -> bool:
        if get_access_token() is not None:
            return True
        client = request.client
        return not tokens_required and loopback_only and client is not None and client.host in _LOOPBACK_CLIENTS

    async def healthz(request: Request) -> Response:
        rejection = await host_check.validate_request(request, is_post=False)
        if rejection is not None:
            return rejection
        upstreams = upstream_status()
        failing = any(report.get("state") == "failing" for report in upstreams.values())
        status = "degraded" if failing else "ok"
        body: dict[str, Any] = {"status": status}
        if may_see_details(request):
            body.update(
                server=server_name,
                event_loop=running_loop(),
                upstreams={name: dict(report) for name, report in upstreams.items()},
            )
        return JSONResponse(body, status_code=503 if failing else 200)

    return healthz
