"""Credentials that speak for the downstream principal: RFC 8693 token exchange, and opt-in pass-through.

Both read the principal's own bearer token through a `SubjectToken` function (the gateway's serving side supplies
it from the request being served) and keep one identity per principal, so two principals never share an upstream
session. The token a request carries is remembered per principal, so a session opened with an older token renews
with the principal's latest one.

`TokenExchange` sends the principal's token to the authorization server and forwards only the token it gets back,
made for the upstream's audience; `PassThrough` forwards the principal's token unchanged, which is what the gateway
never does unless an upstream's config asks for it (`"auth": {"type": "passThrough"}`).
"""

from __future__ import annotations

import logging
from collections import defaultdict

import anyio
import httpx2

from gateway.client.credentials.credential import BearerAuth, Credential, SubjectToken
from gateway.errors import CredentialError
from gateway.oauth import ClientAuthMethod, ConfiguredEndpoint, IssuedToken
from gateway.tools import ReadonlyContext

__all__ = ["PassThrough", "TokenExchange"]

logger = logging.getLogger(__name__)

_NO_SUBJECT = (
    "The call carried no bearer token of the downstream client to {what}. Serve the gateway over HTTP with inbound "
    "auth (the config's 'auth' section or --auth-token), so that every request has a principal with a token."
)


class _PrincipalCredential(Credential):
    """Per-principal token sources, each seeing the latest token its principal presented."""

    _purpose = "authenticate to the upstream with"

    def __init__(self, subject_token: SubjectToken | None) -> None:
        self._subject_token = subject_token
        self._subjects: dict[str, str] = {}
        self._auths: dict[str, BearerAuth] = {}

    def bind_subject(self, subject_token: SubjectToken) -> None:
        """Where principals' tokens come from (set by whoever serves the downstream side, e.g. the gateway)."""
        self._subject_token = subject_token

    def identity(self, context: ReadonlyContext | None) -> str:
        return context.user_id if context is not None else ""

    def auth(self, context: ReadonlyContext | None) -> httpx2.Auth:
        """The principal's auth; raises `CredentialError` at once (before any connection attempt, so the upstream
        is not counted as failing) when the principal never presented a token."""
        principal = self.identity(context)
        subject = self._subject_token(context) if self._subject_token is not None else None
        if subject is not None:
            self._subjects[principal] = subject
        self.subject(principal, self._purpose)
        if principal not in self._auths:
            self._auths[principal] = BearerAuth(_PrincipalSource(self, principal))
        return self._auths[principal]

    def subject(self, principal: str, what: str) -> str:
        """The latest token of a principal.

        Raises:
            CredentialError: the principal presented none.
        """
        subject = self._subjects.get(principal)
        if subject is None:
            raise CredentialError(_NO_SUBJECT.format(what=what))
        return subject

    async def token_for(self, principal: str, rejected: str | None) -> str | None:
        raise NotImplementedError


class _PrincipalSource:
    def __init__(self, credential: _PrincipalCredential, principal: str) -> None:
        self._credential = credential
        self._principal = principal

    async def token(self, *, rejected: str | None = None) -> str | None:
        return await self._credential.token_for(self._principal, rejected)


class TokenExchange(_PrincipalCredential):
    """The principal's token exchanged for one made for the upstream (RFC 8693), cached per principal until it
    expires, the principal's token changes, or the upstream refuses it.

    Args:
        client_id: the gateway's client id at the authorization server (which must allow it to exchange).
        client_secret: its secret.
        token_url: the token endpoint; or give `issuer` to read it from the issuer's metadata.
        issuer: the authorization server's issuer URL.
        audience: the audience to ask for (e.g. the upstream's client id or URL).
        resource: the upstream's resource indicator (RFC 8707).
        scope: space-separated scopes to ask for.
        subject_token: where principals' tokens come from (the gateway binds its own with `bind_subject`).
    """

    def __init__(
        self,
        *,
        client_id: str,
        client_secret: str | None = None,
        token_url: str | None = None,
        issuer: str | None = None,
        audience: str | None = None,
        resource: str | None = None,
        scope: str | None = None,
        auth_method: ClientAuthMethod = "client_secret_basic",
        subject_token: SubjectToken | None = None,
    ) -> None:
        super().__init__(subject_token)
        self._where = ConfiguredEndpoint(
            client_id, client_secret, auth_method, token_url=token_url, issuer=issuer, needs="Token exchange needs"
        )
        self._asked = {"audience": audience, "resource": resource, "scope": scope}
        self._issued: dict[str, tuple[str, IssuedToken]] = {}
        self._locks: defaultdict[str, anyio.Lock] = defaultdict(anyio.Lock)

    def describe(self) -> str:
        return f"OAuth token exchange (client {self._where.client_id!r} at {self._where.location})"

    async def token_for(self, principal: str, rejected: str | None) -> str | None:
        async with self._locks[principal]:
            subject = self.subject(principal, "exchange for an upstream token")
            held = self._issued.get(principal)
            if held is not None:
                held_subject, issued = held
                if held_subject == subject and issued.fresh() and issued.access_token != rejected:
                    return issued.access_token
            endpoint = await self._where.endpoint()
            asked = self._asked
            issued = await endpoint.exchange(
                subject, audience=asked["audience"], resource=asked["resource"], scope=asked["scope"]
            )
            self._issued[principal] = (subject, issued)
            logger.debug("Exchanged the token of principal %r at %s.", principal, endpoint.url)
            return issued.access_token


class PassThrough(_PrincipalCredential):
    """The principal's own token, forwarded unchanged (only where a config entry opts in)."""

    def __init__(self, subject_token: SubjectToken | None = None) -> None:
        super().__init__(subject_token)

    def describe(self) -> str:
        return "the downstream client's own token (pass-through)"

    async def token_for(self, principal: str, rejected: str | None) -> str | None:
        subject = self.subject(principal, "pass through")
        return None if subject == rejected else subject
