"""The command line's side of inbound auth and policy: `serve --oauth-*` flags, and what `check` reports."""

from __future__ import annotations

import argparse
import logging
from typing import TYPE_CHECKING, Any

from gateway.errors import GatewayError

if TYPE_CHECKING:
    from gateway.config import GatewayConfig
    from gateway.server.auth.oauth_settings import OAuthSettings

__all__ = ["add_oauth_flags", "check_access", "oauth_settings"]

logger = logging.getLogger(__name__)

_WILDCARD_HOSTS = ("0.0.0.0", "::", "")


def add_oauth_flags(parser: argparse.ArgumentParser) -> None:
    """The `serve` flags that make HTTP an OAuth 2.1 resource server (they override the config's `auth`)."""
    group = parser.add_argument_group(
        "OAuth resource server (HTTP)", "accept access tokens of an authorization server (overrides the config's auth)"
    )
    group.add_argument("--oauth-issuer", metavar="URL", help="the issuer whose tokens are accepted (turns OAuth on)")
    group.add_argument(
        "--oauth-resource",
        metavar="URL",
        help="this gateway's public URL, the tokens' audience (default: http://HOST:PORT/mcp)",
    )
    group.add_argument(
        "--oauth-audience", action="append", default=[], metavar="AUD", help="accepted aud instead (repeatable)"
    )
    group.add_argument("--oauth-jwks-uri", metavar="URL", help="signing keys (default: from the issuer's metadata)")
    group.add_argument(
        "--oauth-scope", action="append", default=[], metavar="SCOPE", help="a scope every token needs (repeatable)"
    )
    group.add_argument(
        "--oauth-claim",
        action="append",
        default=[],
        metavar="NAME",
        help="a token claim policies may match on (repeatable; default: groups)",
    )


def oauth_settings(
    args: argparse.Namespace, config: GatewayConfig | None, host: str, port: int
) -> OAuthSettings | None:
    """The resource-server settings of the flags and the config's `auth` (None: OAuth off).

    Raises:
        GatewayError: OAuth is asked for over stdio.
        ConfigError: a setting is invalid.
    """
    from gateway.config.access import AuthConfig

    base: dict[str, Any] = config.auth.model_dump() if config is not None and config.auth is not None else {}
    flags = {
        "issuer": args.oauth_issuer,
        "resource": args.oauth_resource,
        "audience": args.oauth_audience or None,
        "jwks_uri": args.oauth_jwks_uri,
        "required_scopes": args.oauth_scope or None,
        "principal_claims": args.oauth_claim or None,
    }
    given = {key: value for key, value in flags.items() if value is not None}
    if args.transport == "stdio":
        # The config's auth is for HTTP; the same file may serve Claude Desktop over stdio.
        if given:
            raise GatewayError("The --oauth-* flags protect HTTP: add --transport http, or leave them out for stdio.")
        return None
    merged = {**base, **given}
    if "issuer" not in merged:
        if given:
            raise GatewayError("The --oauth-* flags need --oauth-issuer URL (or an auth section in the config).")
        return None
    auth = AuthConfig.model_validate(merged)
    if auth.resource is None and port == 0:
        raise GatewayError("With --port 0 the gateway's URL is not known in advance: give --oauth-resource URL.")
    if auth.resource is None and host in _WILDCARD_HOSTS:
        logger.warning(
            "OAuth resource defaults to http://%s:%s/mcp; give --oauth-resource (or auth.resource) with the URL "
            "clients use, or their tokens will name another audience.",
            host,
            port,
        )
    shown = f"[{host}]" if ":" in host else host
    return auth.settings(f"http://{shown}:{port}/mcp")


async def check_access(config: GatewayConfig, published: list[tuple[str, str]]) -> int:
    """Report the auth section (can its issuer's keys be fetched?) and the effective policy; returns failures."""
    from gateway.cli._policy_table import policy_table
    from gateway.config.access import policy_of

    failures = 0
    if config.auth is not None:
        from gateway.server.auth.token_verifier import OAuthTokenVerifier

        settings = config.auth.settings(config.auth.resource or "http://127.0.0.1:8000/mcp")
        verifier = OAuthTokenVerifier(settings)
        try:
            jwks = await verifier.authorization_server.jwks()
            keys = len(jwks.get("keys", []))
            resource = config.auth.resource or "http://HOST:PORT/mcp of serve (set auth.resource behind a proxy)"
            print(f"  ok    auth: issuer {settings.issuer}, {keys} signing keys, resource {resource}")
        except GatewayError as exc:
            failures += 1
            print(f"  FAIL  auth: {exc}")
        finally:
            await verifier.aclose()
    policy = policy_of(config.policies)
    if policy is not None:
        print(f"policies ({len(policy.rules)} rules), effective per principal:")
        for line in policy_table(policy, sorted({name for name, _ in published})):
            print(f"  {line}".rstrip())
    return failures
