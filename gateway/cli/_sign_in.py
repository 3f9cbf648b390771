"""`adk-mcp-gateway login CONFIG UPSTREAM`: the one-time user sign-in of an upstream whose `auth` is `oauth`.

It prints the authorization URL (and opens a browser unless told not to), waits for the redirect on a loopback
listener, and stores the tokens where the gateway finds them (`gateway.client.credentials.token_file`); the gateway
then renews them itself. Nothing secret is printed.
"""

from __future__ import annotations

import logging
import sys
import webbrowser

import anyio

from gateway.client.credentials import TokenFile, log_in
from gateway.config import load_config
from gateway.config.upstream_auth import OAuthLoginAuth
from gateway.errors import ConfigError, CredentialError, UpstreamUnavailableError

__all__ = ["sign_in"]

logger = logging.getLogger(__name__)


async def sign_in(config_path: str, key: str, *, open_browser: bool = True, port: int | None = None) -> int:
    """Sign in to the upstream `key` of a config; returns the exit code (0 signed in, 1 the sign-in failed).

    Raises:
        ConfigError: the config has no such upstream, or its `auth` is not a user login.
    """
    config = load_config(config_path)
    server = config.mcp_servers.get(key)
    if server is None:
        known = ", ".join(sorted(config.mcp_servers)) or "none"
        raise ConfigError(f"{config_path}: there is no upstream {key!r} in mcpServers (known: {known}).")
    auth = server.auth
    if not isinstance(auth, OAuthLoginAuth) or server.url is None:
        raise ConfigError(
            f'{config_path}: mcpServers.{key} has no user login to sign in to; give it "auth": {{"type": "oauth"}} '
            "(client credentials and token exchange need no login)."
        )
    file = TokenFile(key, server.url)

    async def show(url: str) -> None:
        print(f"Sign in to {key!r} by opening this URL in a browser:\n\n  {url}\n", file=sys.stderr, flush=True)
        if open_browser:
            await anyio.to_thread.run_sync(webbrowser.open, url)

    try:
        result = await log_in(
            server.connection(config.base),
            file,
            open_url=show,
            scope=auth.scope,
            client_id=auth.client_id,
            client_secret=auth.client_secret,
            port=auth.redirect_port if port is None else port,
        )
    except (CredentialError, UpstreamUnavailableError) as exc:
        print(f"adk-mcp-gateway: login failed: {exc}", file=sys.stderr)
        return 1
    print(f"Signed in to {key!r} ({result.tools} tools). Tokens stored in {result.path}.", file=sys.stderr)
    return 0
