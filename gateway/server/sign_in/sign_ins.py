"""`SignIns`: the OAuth2 authorization-code sign-ins a served tool's `request_credential` starts.

One sign-in: the server makes a PKCE S256 verifier and a `state` (32 random bytes, bound to the principal, the
session, the tool and the credential key; it expires after `lifetime` seconds and is accepted once), builds the
provider's authorization URL with the server's own callback as `redirect_uri`, and hands the client (URL-mode
elicitation) its own link page instead (`LINK_PATH`, `gateway.server.sign_in.link`), which makes sure the browser is
the calling user's, binds the sign-in to that browser, and only then sends it on to the provider. The provider
redirects the browser to `GET /oauth/callback?code=…&state=…`; the server checks that it is the bound browser,
exchanges the code (once: the state is spent before the exchange), stores the credential for the principal, and
wakes the call that waits for it.

A callback with an unknown, spent or expired `state`, or with the provider's `error`, does nothing but show a page
saying so; one from another browser than the bound one ends the sign-in without storing anything, and says why.
Pending sign-ins are also kept in the state store (`gateway.server.sign_in.records`), so the callback may reach any
process sharing it (`serve --workers`, replicas): the one it reaches completes the sign-in, and the call waiting in
the process that started it learns the outcome from the store.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable
from typing import Final
from urllib.parse import urlencode, urlparse

import anyio
from starlette.requests import Request
from starlette.responses import Response

from gateway.oauth import challenge_parameters, new_code_verifier
from gateway.server.sign_in.browser import presented
from gateway.server.sign_in.gateway_login import GatewayLogin
from gateway.server.sign_in.oauth_tokens import TokenError
from gateway.server.sign_in.pages import invalid_link_page, page
from gateway.server.sign_in.pending import PendingSignIn
from gateway.server.sign_in.records import SignInRecords
from gateway.state.credential_store import CredentialStore
from gateway.tools import AuthConfig, AuthCredential, OAuth2, OAuth2Auth, OpenIdConnectWithConfig

__all__ = ["CALLBACK_PATH", "LINK_PATH", "PendingSignIn", "SignIns", "authorization_endpoints"]

logger = logging.getLogger(__name__)

CALLBACK_PATH: Final = "/oauth/callback"
LINK_PATH: Final = "/oauth/sign-in"
"""The gateway's own page a sign-in link opens (`gateway.server.sign_in.link`)."""
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
        self.login: GatewayLogin | None = None
        """How a link's page learns whose browser opened it: the gateway's own login at its authorization server.
        None: the first browser to open a link is taken as the user's (right only for a server with one user)."""
        self.unverifiable: str | None = None
        """Why no sign-in may start: the server tells principals apart but has no way to tell whose a browser is."""

    @property
    def lifetime(self) -> float:
        """Seconds a sign-in link stays valid."""
        return self._lifetime

    async def bound_browser(self, pending: PendingSignIn) -> str | None:
        """The digest of the browser cookie `pending` is bound to (`gateway.server.sign_in.browser`); None: none yet."""
        if self._records is not None:
            return await self._records.browser(pending.state)
        return pending.browser

    async def bind_browser(self, pending: PendingSignIn, digest: str, *, first: bool) -> bool:
        """Bind `pending` to the browser whose cookie has `digest`; with `first`, only if no browser is bound yet
        (returns whether it is bound to that browser now)."""
        if self._records is not None:
            return await self._records.bind(pending.state, digest, first=first)
        if first and pending.browser is not None:
            return pending.browser == digest
        pending.browser = digest
        return True

    async def from_bound_browser(self, pending: PendingSignIn, request: Request) -> bool:
        """Whether `request` comes from the browser `pending` is bound to."""
        return presented(request, pending.state, await self.bound_browser(pending))

    async def refuse(self, state: str, reason: str) -> bool:
        """End the sign-in `state` names without a credential, saying why to its call; False if it was no longer
        pending (used, expired, or taken by another process)."""
        pending = await self.take(state)
        if pending is None:
            return False
        await self.fail(pending, reason)
        return True

    async def begin(
        self, config: AuthConfig, *, principal: str, session_owner: str, tool_name: str, redirect_uri: str, link: str
    ) -> PendingSignIn:
        """The sign-in for this session, tool and credential: the one in flight, or a new one (`link`: the URL of
        the gateway's link page, `LINK_PATH`).

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
        verifier = new_code_verifier()
        query = {
            "response_type": "code",
            "client_id": raw.client_id,
            "redirect_uri": redirect,
            **challenge_parameters(verifier),
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
            link=link,
        )

    async def begin_entry(
        self, config: AuthConfig, *, principal: str, session_owner: str, tool_name: str, page_url: str, link: str
    ) -> PendingSignIn:
        """The entry of a secret (API key, token) on the server's own page at `page_url`: in flight, or new."""
        return await self._begin(config, (principal, session_owner, tool_name), page_url, {}, link=link)

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
        link: str,
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
            link=f"{link}?{urlencode({'state': state})}",
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
        # A failed one too, until its call has been told (`wait` forgets it then): a 2026-07-28 client's next round
        # of the same call must learn why, not be sent a new link.
        return self._by_owner.get(owner)

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
        if found is not None and found.tokens is not None and not await self.from_bound_browser(found, request):
            # The provider's URL was carried away from the browser the link's page bound (forwarded, or the
            # state lifted from it): whoever signed in here is not known to be the user who asked.
            reason = (
                f"The sign-in at {found.provider} was finished in a browser that did not open this sign-in's link, "
                "so nothing was stored"
            )
            if not await self.refuse(state, reason):
                return invalid_link_page()
            return page(
                403,
                "Sign-in refused",
                f"{reason}. Only the browser that opened the link from the MCP client can finish it; if someone sent "
                "you this link, you do not need to do anything.",
            )
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
        for pending in [p for p in self._by_owner.values() if p.expires_at < now and p.credential is None]:
            self._drop(pending)
