"""The sign-in callback on loopback, for a server with no HTTP front of its own (stdio).

A stdio server's sign-ins need somewhere for the provider to send the browser back to: `callback_listener` serves
the sign-in routes (the link's page, `GET /oauth/callback`, the entry page) alone on `127.0.0.1` (the port of a
configured loopback `callback_url`, else a free one) for as long as the server runs. Loopback redirect URIs are
what RFC 8252 prescribes for native apps; register `http://127.0.0.1:PORT/oauth/callback` with the provider (fix the
port with `callback_url`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from typing import Final
from urllib.parse import urlparse

from starlette.applications import Starlette
from starlette.routing import Route

from gateway.errors import ConfigError
from gateway.oauth import redirect_listener
from gateway.server.http._runner import listen
from gateway.server.sign_in.credential_requests import ServerCredentials
from gateway.server.sign_in.link import SignInLinks
from gateway.server.sign_in.secret_entry import ENTRY_PATH, entry_endpoint
from gateway.server.sign_in.sign_ins import CALLBACK_PATH

__all__ = ["callback_listener"]

_LOOPBACK: Final = frozenset({"127.0.0.1", "localhost"})


@contextlib.asynccontextmanager
async def callback_listener(credentials: ServerCredentials) -> AsyncGenerator[str]:
    """Serve the sign-in callback on loopback while the block runs; yields (and sets) the callback URL.

    Raises:
        ConfigError: the configured callback URL is not on loopback, or its port cannot be bound.
    """
    port = 0
    configured = credentials.callback_url
    if configured is not None:
        parsed = urlparse(configured)
        if parsed.hostname not in _LOOPBACK or parsed.path != CALLBACK_PATH:
            raise ConfigError(
                f"callback_url {configured!r} cannot be served over stdio: it must be "
                f"http://127.0.0.1:PORT{CALLBACK_PATH} (or localhost), which this process listens on."
            )
        port = parsed.port or 80
    sock = listen("127.0.0.1", port)
    url = configured or f"http://127.0.0.1:{sock.getsockname()[1]}{CALLBACK_PATH}"
    sign_ins = credentials.sign_ins
    app = Starlette(
        routes=[
            Route(CALLBACK_PATH, sign_ins.callback, methods=["GET"]),
            Route(ENTRY_PATH, entry_endpoint(sign_ins), methods=["GET", "POST"]),
            *SignInLinks(sign_ins).routes(),
        ]
    )
    credentials.callback_url = url
    async with redirect_listener(app, sock):
        yield url
