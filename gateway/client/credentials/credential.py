"""`Credential`: how the gateway authenticates to one upstream, and the `httpx2.Auth` that applies it.

A credential gives an `httpx2.Auth` for the context that opens an upstream session. Most speak for the gateway
itself (one identity for everyone: static headers, client credentials, a stored login); some speak for the
downstream principal (token exchange, pass-through), and their `identity` keeps each principal's upstream sessions
apart.

Bearer credentials are token sources: `BearerAuth` asks for a token before each request, and on a 401 asks once
for a fresher one (`rejected=` the token the upstream refused) and sends the request once more — a second 401 is
the answer, never a loop.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Callable
from typing import Final, Protocol

import httpx2

from gateway.tools import ReadonlyContext

__all__ = ["BearerAuth", "Credential", "HeaderCredential", "SharedTokenCredential", "SubjectToken", "TokenSource"]

logger = logging.getLogger(__name__)

_UNAUTHORIZED: Final = 401

SubjectToken = Callable[[ReadonlyContext | None], str | None]
"""The downstream principal's own bearer token for a context (None when the request carried none)."""


class TokenSource(Protocol):
    """Access tokens for one identity."""

    async def token(self, *, rejected: str | None = None) -> str | None:
        """A token to send now; with `rejected`, one other than the token the upstream just refused (None: none).

        Raises:
            CredentialError: no token can be had (the message says what to do).
        """
        ...


class BearerAuth(httpx2.Auth):
    """Sends `Authorization: Bearer` from a token source; a 401 gets one fresher token and one more try."""

    def __init__(self, source: TokenSource) -> None:
        self._source = source

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        token = await self._source.token()
        if token is not None:
            request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        if response.status_code != _UNAUTHORIZED or token is None:
            return
        fresher = await self._source.token(rejected=token)
        if fresher is None or fresher == token:
            return
        logger.debug("%s %s was refused with 401; retrying once with a renewed token.", request.method, request.url)
        request.headers["Authorization"] = f"Bearer {fresher}"
        yield request


class Credential(ABC):
    """How the gateway authenticates to one upstream (see the module docstring)."""

    def identity(self, context: ReadonlyContext | None) -> str:
        """Whom the credential speaks for in a context: sessions of different identities are never shared."""
        del context
        return ""

    def refused(self, context: ReadonlyContext | None) -> bool:
        """Whether the upstream just refused the credential of a context's identity alone (one user's sign-in), so
        a failed connection says nothing about the upstream itself; default: no."""
        del context
        return False

    @abstractmethod
    def auth(self, context: ReadonlyContext | None) -> httpx2.Auth:
        """The auth for requests made on behalf of a context (called for every request of a session's identity,
        so a per-principal credential sees the principal's latest token)."""

    @abstractmethod
    def describe(self) -> str:
        """What kind of credential this is, for messages (never a secret)."""


class _HeaderAuth(httpx2.Auth):
    def __init__(self, headers: dict[str, str], params: dict[str, str]) -> None:
        self._headers = headers
        self._params = params

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        request.headers.update(self._headers)
        if self._params:
            request.url = request.url.copy_merge_params(self._params)
        yield request


class HeaderCredential(Credential):
    """Fixed headers (an API key, a static bearer token, HTTP Basic) or query parameters on every request."""

    def __init__(self, headers: dict[str, str] | None = None, *, params: dict[str, str] | None = None) -> None:
        self._auth = _HeaderAuth(dict(headers or {}), dict(params or {}))
        self._names: list[str] = sorted([*(headers or {}), *(f"?{name}" for name in params or {})])

    def auth(self, context: ReadonlyContext | None) -> httpx2.Auth:
        del context
        return self._auth

    def describe(self) -> str:
        return f"static credentials ({', '.join(self._names)})"


class SharedTokenCredential(Credential, TokenSource):
    """A bearer token the gateway holds for itself, the same for every caller (renewed as it expires)."""

    def __init__(self) -> None:
        self._auth = BearerAuth(self)

    def auth(self, context: ReadonlyContext | None) -> httpx2.Auth:
        del context
        return self._auth

    @abstractmethod
    async def token(self, *, rejected: str | None = None) -> str | None:
        """A token to send now (see `TokenSource.token`)."""
