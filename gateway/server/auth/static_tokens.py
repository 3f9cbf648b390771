"""Static bearer tokens for the HTTP front: each token names a principal."""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Iterable
from typing import Final

from mcp.server.auth.provider import AccessToken

from gateway.errors import ConfigError

__all__ = ["TOKENS_ENV", "StaticTokenVerifier", "parse_tokens"]

TOKENS_ENV: Final = "ADK_MCP_GATEWAY_TOKENS"
"""Comma-separated `USER=TOKEN` (or bare `TOKEN`) pairs, read when no token is given on the command line."""

_MIN_TOKEN_LENGTH: Final = 16


def parse_tokens(specs: Iterable[str]) -> dict[str, str]:
    """`USER=TOKEN` or `TOKEN` specs → {token: principal}. A bare token's principal is a digest of it.

    Raises:
        ConfigError: a token shorter than 16 characters or given twice.
    """
    tokens: dict[str, str] = {}
    for raw in specs:
        spec = raw.strip()
        if not spec:
            continue
        user, sep, token = spec.partition("=")
        if not sep:
            user, token = "", spec
        if len(token) < _MIN_TOKEN_LENGTH:
            raise ConfigError(
                f"Auth token for {user or 'an unnamed user'} is too short ({len(token)} characters); use at least "
                f"{_MIN_TOKEN_LENGTH}, e.g. the output of `python -c 'import secrets; print(secrets.token_urlsafe())'`."
            )
        if token in tokens:
            raise ConfigError(f"The same auth token is given twice (for {tokens[token]!r} and {user or 'unnamed'!r}).")
        tokens[token] = user or "token-" + hashlib.sha256(token.encode()).hexdigest()[:12]
    return tokens


def tokens_from_env() -> dict[str, str]:
    """The tokens in `$ADK_MCP_GATEWAY_TOKENS`, if set."""
    return parse_tokens(os.environ.get(TOKENS_ENV, "").split(","))


class StaticTokenVerifier:
    """A `TokenVerifier` for a fixed set of tokens, compared in constant time."""

    def __init__(self, tokens: dict[str, str]) -> None:
        self._tokens = dict(tokens)

    async def verify_token(self, token: str) -> AccessToken | None:
        """The principal's access token, or None for an unknown token."""
        for known, principal in self._tokens.items():
            if hmac.compare_digest(known.encode(), token.encode()):
                return AccessToken(token=token, client_id=principal, scopes=[], subject=principal)
        return None
