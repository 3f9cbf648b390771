"""`HostCheck`: the HTTP front's DNS-rebinding protection, whose refusals say how to allow a host.

The SDK's `TransportSecurityMiddleware` answers a Host it does not know with `421 Invalid Host header` (and an
Origin with `403 Invalid Origin header`), which tells neither the client nor the operator that a server bound to
another interface than loopback serves only the names `--allow-host` adds. `HostCheck` answers the same statuses
with a message naming the host and the flag, and logs it for the operator. `guard` puts the check in front of an
ASGI app, so the SDK's own check behind it (with the same settings) never answers first.

The SDK matches an allowed `scheme://host:*` origin by prefix, so `http://127.0.0.1:8000@evil.example` (the origin
of evil.example, were it one) or `http://127.0.0.1:8000.evil.example` passed as loopback. A browser sends an origin
serialized as `scheme://host[:port]`, or `null` (RFC 6454 §6.1): `HostCheck` refuses any other `Origin` before the
SDK's comparison, so what that compares is exactly a scheme, a host and a port.
"""

from __future__ import annotations

import logging
import re
from typing import Final
from urllib.parse import urlsplit

from mcp.server.transport_security import TransportSecurityMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["HostCheck"]

logger = logging.getLogger(__name__)

_MISDIRECTED: Final = 421
_FORBIDDEN: Final = 403
_SERIALIZED_ORIGIN: Final = re.compile(
    r"[A-Za-z][A-Za-z0-9+.-]*://(?:[A-Za-z0-9._~%-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?"
)
"""`scheme "://" host [":" port]`: a host name or IPv4 address (letters, digits, `.`, `-`, `_`, `~`, `%`: no `@`,
`/`, `:`, `?` or `#`), or an IP literal in brackets."""


def _host_name(url: str) -> str:
    """The host name of a URL or `//host[:port]`, as `--allow-host` takes it (an IPv6 literal in brackets)."""
    try:
        name = urlsplit(url).hostname or ""
    except ValueError:  # a malformed IPv6 literal
        return ""
    return f"[{name}]" if ":" in name else name


def _is_serialized(origin: str) -> bool:
    """Whether `origin` is an origin as a browser serializes it (`null` included)."""
    return origin == "null" or _SERIALIZED_ORIGIN.fullmatch(origin) is not None


class HostCheck(TransportSecurityMiddleware):
    """DNS-rebinding protection (loopback plus the allowed hosts) whose refusals name `--allow-host`."""

    async def validate_request(self, request: Request, is_post: bool = False) -> Response | None:
        """None when the request may be served, else the refusal to send (400, 421 or 403)."""
        origin = request.headers.get("origin")
        if self.settings.enable_dns_rebinding_protection and origin is not None and not _is_serialized(origin):
            logger.warning("Refused a request with the Origin header %r (403): it is not an origin", origin[:200])
            message = f"Invalid Origin header: {origin[:200]!r} is not an origin (scheme://host[:port]).\n"
            return PlainTextResponse(message, status_code=_FORBIDDEN)
        refusal = await super().validate_request(request, is_post)
        if refusal is None or refusal.status_code not in (_MISDIRECTED, _FORBIDDEN):
            return refusal
        if refusal.status_code == _MISDIRECTED:
            header, value = "Host", request.headers.get("host", "")
            name = _host_name(f"//{value}")
        else:
            header, value = "Origin", request.headers.get("origin", "")
            name = _host_name(value)
        fix = f"--allow-host {name}" if name else "--allow-host HOST"
        logger.warning(
            "Refused a request with %s %r (%d): this server accepts loopback names only, and the hosts given "
            "with --allow-host. To serve clients that use this name, restart it with %s.",
            header,
            value,
            refusal.status_code,
            fix,
        )
        message = (
            f"Invalid {header} header: {value!r} is not a host this server accepts (DNS-rebinding protection). "
            f"The server's operator can allow it by serving with `{fix}` (`allowed_hosts` in Python).\n"
        )
        return PlainTextResponse(message, status_code=refusal.status_code)

    def guard(self, app: ASGIApp) -> ASGIApp:
        """`app` behind this check: a refused request is answered here and never reaches `app`."""
        return _Guarded(app, self)


class _Guarded:
    """An ASGI app behind a `HostCheck` (a class: Starlette's `Route` takes a function for a request handler)."""

    def __init__(self, app: ASGIApp, check: HostCheck) -> None:
        self._app = app
        self._check = check

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = await self._check.validate_request(Request(scope, receive))
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self._app(scope, receive, send)
