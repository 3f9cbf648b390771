"""A served tool's `request_credential`, answered: refresh, sign-in through URL-mode elicitation, or a clear error.

Per call, the principal's stored credentials are loaded (those whose access token has expired are left out), so
`tool_context.get_auth_response` finds them. When the tool asks for a credential anyway (`request_credential`):

1. a stored OAuth2 credential with a refresh token is refreshed first (once per call), without asking anyone;
2. otherwise (no credential, the refresh refused, or the tool rejected what it was given) the user signs in:
   the server sends its own sign-in link (`gateway.server.sign_in.link`: it makes sure the browser is the calling
   user's, then sends it on to the provider's authorization URL) as a URL-mode elicitation (a push
   `elicitation/create` in the handshake era, an `InputRequiredResult` round in 2026-07-28), waits for its callback
   route to receive the code and store the credential, sends `notifications/elicitation/complete` (handshake era),
   and the tool runs again — one client-visible `tools/call`;
3. a client without URL elicitation gets an `isError` result naming the sign-in URL: sign in, then call again;
   so does one whose user dismissed the elicitation (`cancel`: the link stays valid), while `decline` ends it.

A tool that asks again right after a sign-in in the same call gets an error, not another sign-in: no loop.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from mcp import types
from mcp.server.context import ServerRequestContext

from gateway.errors import ConfigError, ServiceNotConfiguredError
from gateway.server.client_features import McpClientFeatures
from gateway.server.identity import CallIdentity
from gateway.server.sign_in.oauth_tokens import TokenError, TokenRequest
from gateway.server.sign_in.openid_discovery import DiscoveryError, with_discovered_endpoints
from gateway.server.sign_in.records import SignInRecords
from gateway.server.sign_in.secret_entry import ENTRY_PATH, entry_fields
from gateway.server.sign_in.sign_ins import CALLBACK_PATH, LINK_PATH, SignIns, authorization_endpoints
from gateway.state import StateStore
from gateway.state.credential_store import CREDENTIAL_KEY_ENV, CredentialKeys, CredentialStore
from gateway.tools import AuthConfig, AuthCredential, OAuth2Auth

__all__ = ["CALLBACK_URL_ENV", "CallCredentials", "ServerCredentials", "no_credential_store"]

logger = logging.getLogger(__name__)

DEFAULT_SIGN_IN_TIMEOUT: Final = 300.0
CALLBACK_URL_ENV: Final = "ADK_MCP_GATEWAY_CALLBACK_URL"
"""The `redirect_uri` of sign-ins, when the server is reached under another URL than its own (a proxy; stdio)."""
_EXPIRY_MARGIN: Final = 30
"""Seconds before its expiry from which an access token counts as expired."""


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def no_credential_store(tool_name: str) -> types.CallToolResult:
    """The answer to a credential request on a server without a credential key."""
    return _error(
        f"Tool {tool_name} needs a user credential, but this server stores none: it has no credential key. The "
        f"server's operator sets ${CREDENTIAL_KEY_ENV} (32 random bytes, URL-safe base64) and restarts it."
    )


def _usable(credential: AuthCredential) -> bool:
    oauth2 = credential.oauth2
    if oauth2 is None or oauth2.expires_at is None:
        return True
    return oauth2.expires_at > time.time() + _EXPIRY_MARGIN


class ServerCredentials:
    """A server's user credentials: the encrypted store and the sign-ins in flight.

    Args:
        store: the credential store.
        sign_ins: the pending sign-ins (their callback route is served by the HTTP app or a loopback listener).
        callback_url: the `redirect_uri` sign-ins use (default: the HTTP request's own base URL + `/oauth/callback`).
        sign_in_timeout: seconds a call waits for the user to finish signing in.
    """

    def __init__(
        self,
        store: CredentialStore,
        sign_ins: SignIns,
        *,
        callback_url: str | None = None,
        sign_in_timeout: float = DEFAULT_SIGN_IN_TIMEOUT,
    ) -> None:
        self.store = store
        self.sign_ins = sign_ins
        self.callback_url = callback_url
        self.sign_in_timeout = sign_in_timeout

    @classmethod
    def configure(
        cls,
        state_store: StateStore,
        *,
        app_name: str,
        keys: Sequence[str | bytes] | None,
        asking: Sequence[str],
        callback_url: str | None,
        sign_in_timeout: float,
    ) -> ServerCredentials | None:
        """A server's credentials, sealed with `keys` (default: `$ADK_MCP_GATEWAY_CREDENTIAL_KEY`); None without keys.

        Raises:
            ConfigError: a key is malformed, or there is none although tools (`asking`) declare they need one.
        """
        sealing = CredentialKeys(keys) if keys else CredentialKeys.from_env()
        if sealing is None:
            if asking:
                raise ConfigError(
                    f"Tools {', '.join(asking)} ask their users for credentials, which this server stores "
                    f"encrypted, but it has no credential key: set ${CREDENTIAL_KEY_ENV} (make one with: python -c "
                    '"import base64, secrets; print(base64.urlsafe_b64encode(secrets.token_bytes(32)).decode())") '
                    "or pass credential_keys=."
                )
            return None
        store = CredentialStore(state_store, sealing, app_name=app_name)
        records = functools.partial(SignInRecords, state_store, sealing, app_name=app_name)
        return cls(
            store,
            SignIns(store, records=lambda lifetime: records(lifetime=lifetime)),
            callback_url=callback_url or os.environ.get(CALLBACK_URL_ENV) or None,
            sign_in_timeout=sign_in_timeout,
        )

    async def usable(self, principal: str) -> dict[str, AuthCredential]:
        """The principal's stored credentials whose access token has not expired, by credential key."""
        return {key: c for key, c in (await self.store.load_all(principal)).items() if _usable(c)}

    async def for_call(
        self, ctx: ServerRequestContext[Any, Any], identity: CallIdentity, tool_name: str, features: McpClientFeatures
    ) -> CallCredentials:
        """The call's credentials: the principal's usable ones, loaded, and the way to ask for more."""
        return CallCredentials(self, ctx, identity, tool_name, features, await self.usable(identity.principal))


@dataclass(eq=False, repr=False)  # its repr would show the loaded credentials
class CallCredentials:
    """One call's credentials (see the module docstring); built by `ServerCredentials.for_call` alone."""

    _server: ServerCredentials
    _ctx: ServerRequestContext[Any, Any]
    _identity: CallIdentity
    _tool: str
    _features: McpClientFeatures
    loaded: dict[str, AuthCredential]
    _refreshed: set[str] = field(default_factory=set[str])
    _signed_in: set[str] = field(default_factory=set[str])

    async def obtain(self, config: AuthConfig) -> AuthCredential | types.CallToolResult:
        """A credential for `config` (stored, refreshed, or from a sign-in), or the result to end the call with.

        Raises:
            InputRequired: a 2026-07-28 client must be asked to sign in first (the call ends with the request).
        """
        key = config.credential_key or ""
        store, principal = self._server.store, self._identity.principal
        try:
            config = await with_discovered_endpoints(config)
        except DiscoveryError as exc:
            return _error(f"Tool {self._tool} asked for an OpenID Connect sign-in, but {exc}")
        endpoints = authorization_endpoints(config)
        if endpoints is None and entry_fields(config) is None:
            return _error(
                f"Tool {self._tool} asked for a credential of a kind this server cannot ask the user for "
                f"({type(config.auth_scheme).__name__}): it signs users in with an OAuth2 authorization-code flow "
                "or OpenID Connect, and asks for API keys, bearer tokens and passwords on its own page; OAuth2 "
                "client-credentials, implicit and password flows and service accounts are not asked for."
            )
        stored = await store.load(principal, key)
        if endpoints is not None and stored is not None and key not in self._refreshed:
            self._refreshed.add(key)
            fresh = await self._refresh(config, endpoints[1], stored)
            if fresh is not None:
                await store.save(principal, key, fresh)
                return fresh
        if key in self._signed_in:
            return _error(
                f"Tool {self._tool} asked for its credential again right after the user signed in; not asking "
                "again in this call. Check the tool's OAuth client and scopes, then call it again."
            )
        self._signed_in.add(key)
        if stored is not None:
            # The tool rejected it (or it could not be refreshed): only a new sign-in helps.
            await store.delete(principal, key)
        return await self._sign_in(config, oauth=endpoints is not None)

    async def _refresh(self, config: AuthConfig, token_url: str, stored: AuthCredential) -> AuthCredential | None:
        if stored.oauth2 is None or not stored.oauth2.refresh_token:
            return None
        raw = config.raw_auth_credential.oauth2 if config.raw_auth_credential is not None else None
        client = OAuth2Auth(
            client_id=raw.client_id if raw else None,
            client_secret=raw.client_secret if raw else None,
            token_endpoint_auth_method=raw.token_endpoint_auth_method if raw else "client_secret_basic",
        )
        try:
            return await TokenRequest(token_url, client).refresh(stored)
        except TokenError as exc:
            logger.info(
                "Refreshing credential %r failed (%s); asking the user to sign in", config.credential_key, exc.error
            )
            return None

    async def _sign_in(self, config: AuthConfig, *, oauth: bool) -> AuthCredential | types.CallToolResult:
        callback_url = self._server.callback_url or self._request_callback_url()
        if callback_url is None:
            return _error(
                f"Tool {self._tool} needs you to sign in, but this server has no callback URL for the sign-in to "
                "return to. Serve it over HTTP, or configure its callback URL."
            )
        sign_ins = self._server.sign_ins
        if sign_ins.unverifiable is not None:
            return _error(f"Tool {self._tool} needs you to sign in, but {sign_ins.unverifiable}")
        base = callback_url.removesuffix(CALLBACK_PATH)
        owner = {
            "principal": self._identity.principal,
            "session_owner": self._identity.session_owner,
            "tool_name": self._tool,
            "link": base + LINK_PATH,
        }
        try:
            if oauth:
                pending = await sign_ins.begin(config, redirect_uri=callback_url, **owner)
            else:
                pending = await sign_ins.begin_entry(config, page_url=base + ENTRY_PATH, **owner)
        except ValueError as exc:
            return _error(f"Tool {self._tool} asked for a sign-in this server cannot start: {exc}")
        message = (
            f"Sign in at {pending.provider} so that {self._tool} can act on your behalf."
            if oauth
            else f"Enter your credential for {self._tool} on this server's page at {pending.provider}."
        )
        try:
            answer = await self._features.elicit_url(message, pending.link, pending.elicitation_id)
        except ServiceNotConfiguredError:
            return _error(
                f"Sign-in required: {self._tool} needs you to sign in at {pending.provider}. Open this URL in a "
                f"browser and sign in, then call the tool again: {pending.link}"
            )
        if answer.action == "cancel":
            # Dismissed, not refused: an app that shows the link later (an ADK agent's confirmation) may still use it.
            return _error(
                f"Sign-in required: {self._tool} did not run. The sign-in link stays valid for "
                f"{round(sign_ins.lifetime / 60)} minutes; open it in a browser and sign in at {pending.provider}, "
                f"then call the tool again: {pending.link}"
            )
        if answer.action != "accept":
            await sign_ins.finished(pending)
            return _error(f"Sign-in at {pending.provider} was declined; {self._tool} did not run.")
        outcome = await sign_ins.wait(pending, self._server.sign_in_timeout)
        if isinstance(outcome, str):
            return _error(f"{outcome} {self._tool} did not run; call it again to sign in again.")
        await self._features.complete_url_elicitation(pending.elicitation_id)
        return outcome

    def _request_callback_url(self) -> str | None:
        request: Any = self._ctx.request
        base_url = getattr(request, "base_url", None)
        if base_url is None:
            return None
        return str(base_url).rstrip("/") + CALLBACK_PATH
