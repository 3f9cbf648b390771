"""`SignIns`: the OAuth2 authorization-code sign-ins a served tool's `request_credential` starts.

One sign-in: the server makes a PKCE S256 verifier and a `state` (32 random bytes, bound to the principal, the
session, the tool and the credential key; it expires after `lifetime` seconds and is accepted once), builds the
provider's authorization URL with the server's own callback as `redirect_uri`, and hands it to the client (URL-mode
elicitation). The provider redirects the browser to `GET /oauth/callback?code=…&state=…`; the server exchanges the
code (once: the state is spent before the exchange), stores the credential for the principal, and wakes the call
that waits for it.

A callback with an unknown, spent or expired `state`, or with the provider's `error`, does nothing but show a page
saying so. Pending sign-ins are also kept in the state store (`gateway.server.sign_in_records`), so the callback
may reach any process sharing it (`serve --workers`, replicas): the one it reaches completes the sign-in, and the
call waiting in the process that started it learns the outcome from the store.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlencode, urlparse

import anyio
from starlette.requests import Request
from starlette.responses import Response

from gateway.server.oauth_tokens import TokenError, TokenRequest
from gateway.server.sign_in_pages import invalid_link_page, page
from gateway.server.sign_in_records import SignInRecords
from gateway.state.credential_store import CredentialStore
from gateway.tools import AuthConfig, AuthCredential, OAuth2, OAuth2Auth, OpenIdConnectWithConfig

__all__ = ["CALLBACK_PATH", "PendingSignIn", "SignIns", "authorization_endpoints"]

logger = logging.getLogger(__name__)

CALLBACK_PATH: Final = "/oauth/callback"
DEFAULT_LIFETIME: Final = 600.0
MAX_PENDING: Final = 10_000
_POLL_INTERVAL: Final = 0.5
"""Seconds between looks at the state store while a call waits for a sign-in another process may complete."""


def authorization_endpoints(config: AuthConfig) -> tuple[str, str, list[str]] | None:
    """(authorization URL, token URL, scopes) of an authorization-code scheme; None for any other scheme."""
    scheme = config.auth_scheme
    if isinstance(scheme, OAuth2) and scheme.flows.authorizationCode is not None:
        flow = scheme.flows.authorizationCode
        return flow.authorizationUrl, flow.tokenUrl, list(flow.scopes)
    if isinstance(scheme, OpenIdConnectWithConfig):
        return scheme.authorization_endpoint, scheme.token_endpoint, list(scheme.scopes or [])
    return None


def _challenge(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")


@dataclass(eq=False)
class PendingSignIn:
    """One sign-in in flight: what the callback needs, and how the waiting call learns the outcome."""

    state: str
    elicitation_id: str
    principal: str
    owner: tuple[str, str, str]
    """(session owner, tool name, credential key): a later round of the same call finds the same sign-in."""
    credential_key: str
    url: str
    redirect_uri: str
    code_verifier: str
    token_url: str | None
    """The OAuth2 client's token endpoint; None for a secret the user enters on the server's own page."""
    client: OAuth2Auth | None
    auth_config: AuthConfig
    expires_at: float
    """When the link expires (`time.time()`: processes compare it)."""
    done: anyio.Event = field(default_factory=anyio.Event)
    credential: AuthCredential | None = None
    failure: str | None = None

    @property
    def tokens(self) -> TokenRequest | None:
        """Requests to the token endpoint as the OAuth2 client; None for a secret entered on the server's page."""
        if self.token_url is None or self.client is None:
            return None
        return TokenRequest(self.token_url, self.client)

    def record(self) -> dict[str, Any]:
        """What another process needs to complete this sign-in (`from_record`)."""
        return {
            "state": self.state,
            "elicitationId": self.elicitation_id,
            "principal": self.principal,
            "owner": list(self.owner),
            "credentialKey": self.credential_key,
            "url": self.url,
            "redirectUri": self.redirect_uri,
            "codeVerifier": self.code_verifier,
            "tokenUrl": self.token_url,
            "client": None if self.client is None else self.client.model_dump(mode="json", exclude_none=True),
            "authConfig": self.auth_config.model_dump(by_alias=True, mode="json", exclude_none=True),
            "expiresAt": self.expires_at,
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> PendingSignIn:
        """The sign-in another process wrote (`record`)."""
        session_owner, tool_name, key = record["owner"]
        client = record["client"]
        return cls(
            state=record["state"],
            elicitation_id=record["elicitationId"],
            principal=record["principal"],
            owner=(session_owner, tool_name, key),
            credential_key=record["credentialKey"],
            url=record["url"],
            redirect_uri=record["redirectUri"],
            code_verifier=record["codeVerifier"],
            token_url=record["tokenUrl"],
            client=None if client is None else OAuth2Auth.model_validate(client),
            auth_config=AuthConfig.model_validate(record["authConfig"]),
            expires_at=record["expiresAt"],
        )

    @property
    def provider(self) -> str:
        """The host the user signs in at (for messages)."""
        return urlparse(self.url).netloc

    @property
    def valid(self) -> bool:
        """Whether the sign-in can still complete (not expired, not completed or failed)."""
        return self.expires_at >= time.time() and not self.done.is_set()


class SignIns:
    """The sign-ins in flight, and the callback route that completes them (see the module docstring).

    Args:
        credentials: where a completed sign-in's credential is stored.
        lifetime: seconds a sign-in link stays valid.
        records: makes (given `lifetime`) the shared records of pending sign-ins; None keeps them in this process.
    """

    def __init__(
        self,
        credentials: CredentialStore,
        *,
        lifetime: float = DEFAULT_LIFETIME,
        records: Callable[[float], SignInRecords] | None = None,
    ) -> None:
        self._credentials = credentials
        self._lifetime = lifetime
        self._records = records(lifetime) if records is not None else None
        self._by_state: dict[str, PendingSignIn] = {}
        self._by_owner: dict[tuple[str, str, str], PendingSignIn] = {}

    async def begin(
        self, config: AuthConfig, *, principal: str, session_owner: str, tool_name: str, redirect_uri: str
    ) -> PendingSignIn:
        """The sign-in for this session, tool and credential: the one in flight, or a new one.

        Raises:
            ValueError: the scheme has no authorization-code flow, or the config names no OAuth2 client id.
        """
        endpoints = authorization_endpoints(config)
        raw = config.raw_auth_credential.oauth2 if config.raw_auth_credential is not None else None
        if endpoints is None or raw is None or not raw.client_id:
            raise ValueError(
                "An OAuth2 sign-in needs an authorization-code flow (or OpenID Connect endpoints) in auth_scheme "
                "and the client id in raw_auth_credential.oauth2.client_id."
            )
        authorize_url, token_url, scopes = endpoints
        redirect = raw.redirect_uri or redirect_uri
        verifier = secrets.token_urlsafe(48)
        query = {
            "response_type": "code",
            "client_id": raw.client_id,
            "redirect_uri": redirect,
            "code_challenge": _challenge(verifier),
            "code_challenge_method": "S256",
        }
        if scopes:
            query["scope"] = " ".join(scopes)
        for name in ("audience", "prompt", "nonce"):
            value = getattr(raw, name)
            if value:
                query[name] = value
        client = OAuth2Auth(
            client_id=raw.client_id,
            client_secret=raw.client_secret,
            token_endpoint_auth_method=raw.token_endpoint_auth_method,
        )
        return await self._begin(
            config,
            (principal, session_owner, tool_name),
            authorize_url,
            query,
            redirect_uri=redirect,
            code_verifier=verifier,
            token_url=token_url,
            client=client,
        )

    async def begin_entry(
        self, config: AuthConfig, *, principal: str, session_owner: str, tool_name: str, page_url: str
    ) -> PendingSignIn:
        """The entry of a secret (API key, token) on the server's own page at `page_url`: in flight, or new."""
        return await self._begin(config, (principal, session_owner, tool_name), page_url, {})

    async def _begin(
        self,
        config: AuthConfig,
        who: tuple[str, str, str],
        url: str,
        query: dict[str, str],
        *,
        redirect_uri: str = "",
        code_verifier: str = "",
        token_url: str | None = None,
        client: OAuth2Auth | None = None,
    ) -> PendingSignIn:
        """The sign-in in flight for (principal, session owner, tool) and the credential key, or a new one sending
        the user to `url` with `query` and a fresh `state`."""
        principal, session_owner, tool_name = who
        key = config.credential_key or ""
        owner = (session_owner, tool_name, key)
        pending = self._in_flight(owner)
        if pending is not None:
            return pending
        state = secrets.token_urlsafe(32)
        separator = "&" if urlparse(url).query else "?"
        pending = PendingSignIn(
            state=state,
            elicitation_id=secrets.token_urlsafe(16),
            principal=principal,
            owner=owner,
            credential_key=key,
            url=f"{url}{separator}{urlencode({**query, 'state': state})}",
            redirect_uri=redirect_uri,
            code_verifier=code_verifier,
            token_url=token_url,
            client=client,
            auth_config=config,
            expires_at=time.time() + self._lifetime,
        )
        if self._records is not None:
            await self._records.save(state, pending.record())
        return self._register(pending)

    async def peek(self, state: str) -> PendingSignIn | None:
        """The valid sign-in `state` names, left in place (a page shows it before the user submits)."""
        pending = self._by_state.get(state) if state else None
        if pending is None and self._records is not None:
            record = await self._records.peek(state)
            pending = PendingSignIn.from_record(record) if record is not None else None
        return pending if pending is not None and pending.valid else None

    async def take(self, state: str) -> PendingSignIn | None:
        """The valid sign-in `state` names, taken: no later request with the same `state` finds it, in any process
        sharing the state store."""
        pending = self._by_state.pop(state, None) if state else None
        if self._records is not None:
            record = await self._records.take(state)
            if record is None:
                pending = None  # another process took it, or it never was
            elif pending is None:
                pending = PendingSignIn.from_record(record)  # started by another process
        if pending is None:
            return None
        if not pending.valid:
            self._drop(pending)
            return None
        return pending

    async def complete(self, pending: PendingSignIn, credential: AuthCredential) -> None:
        """Store the credential a sign-in obtained and wake the call waiting for it (in whichever process)."""
        await self._credentials.save(pending.principal, pending.credential_key, credential)
        pending.credential = credential
        pending.done.set()
        if self._records is not None:
            await self._records.finish(pending.state, {"done": True})

    async def fail(self, pending: PendingSignIn, reason: str) -> None:
        """End a sign-in without a credential, saying why."""
        pending.failure = reason
        pending.done.set()
        if self._records is not None:
            await self._records.finish(pending.state, {"failure": reason})

    def _in_flight(self, owner: tuple[str, str, str]) -> PendingSignIn | None:
        self._forget_expired()
        pending = self._by_owner.get(owner)
        return pending if pending is not None and pending.failure is None else None

    def _register(self, pending: PendingSignIn) -> PendingSignIn:
        if len(self._by_state) >= MAX_PENDING:
            self._drop(next(iter(self._by_state.values())))
        self._by_state[pending.state] = pending
        self._by_owner[pending.owner] = pending
        return pending

    async def wait(self, pending: PendingSignIn, within: float) -> AuthCredential | str:
        """The credential the sign-in stored, or why there is none (failed, or not finished `within` seconds).

        The callback may complete it in another process: then the state store says so (looked at every
        `_POLL_INTERVAL` seconds while waiting).
        """
        with anyio.move_on_after(within):
            while not pending.done.is_set():
                with anyio.move_on_after(_POLL_INTERVAL):
                    await pending.done.wait()
                if not pending.done.is_set():
                    await self._outcome_elsewhere(pending)
        if pending.done.is_set() and self._records is not None:
            await self._records.forget(pending.state)
        if pending.credential is not None:
            self._by_owner.pop(pending.owner, None)
            return pending.credential
        if pending.failure is not None:
            self._by_owner.pop(pending.owner, None)
            return pending.failure
        return f"The sign-in at {pending.provider} did not finish within {within:g} seconds."

    async def _outcome_elsewhere(self, pending: PendingSignIn) -> None:
        """Take the outcome another process wrote for `pending`, if there is one."""
        outcome = await self._records.outcome(pending.state) if self._records is not None else None
        if outcome is None:
            return
        if outcome.get("done"):
            pending.credential = await self._credentials.load(pending.principal, pending.credential_key)
        pending.failure = None if pending.credential is not None else str(outcome.get("failure") or "failed")
        pending.done.set()

    async def finished(self, pending: PendingSignIn) -> None:
        """Forget a sign-in its call no longer waits for."""
        self._drop(pending)
        if self._records is not None:
            await self._records.forget(pending.state)

    async def callback(self, request: Request) -> Response:
        """`GET /oauth/callback`: complete the sign-in `state` names, once."""
        state = request.query_params.get("state", "")
        found = await self.peek(state)
        pending = await self.take(state) if found is not None and found.tokens is not None else None
        if pending is None or pending.tokens is None:
            return invalid_link_page()
        error = request.query_params.get("error")
        code = request.query_params.get("code")
        if error or not code:
            description = request.query_params.get("error_description", "")
            reason = f"The sign-in at {pending.provider} was not completed: {error or 'no code'}" + (
                f" ({description})" if description else ""
            )
            await self.fail(pending, reason)
            return page(400, "Sign-in not completed", reason + ". You can close this window.")
        try:
            credential = await pending.tokens.exchange_code(
                code, redirect_uri=pending.redirect_uri, code_verifier=pending.code_verifier
            )
        except TokenError as exc:
            logger.warning("Sign-in for credential %r failed: %s", pending.credential_key, exc.error or "error")
            await self.fail(pending, f"The sign-in at {pending.provider} failed: {exc}")
            return page(502, "Sign-in failed", pending.failure or "")
        await self.complete(pending, credential)
        return page(200, "Signed in", "You are signed in. You can close this window and return to your MCP client.")

    def _drop(self, pending: PendingSignIn) -> None:
        self._by_state.pop(pending.state, None)
        if self._by_owner.get(pending.owner) is pending:
            del self._by_owner[pending.owner]

    def _forget_expired(self) -> None:
        now = time.time()
        for pending in [p for p in self._by_owner.values() if p.expires_at < now and not p.done.is_set()]:
            self._drop(pending)
