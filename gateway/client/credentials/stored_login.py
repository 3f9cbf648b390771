"""`StoredLogin`: a user's login to an upstream (authorization code + PKCE, done once by `adk-mcp-gateway login`),
its access token renewed with the refresh token as it expires, the renewed tokens stored again."""

from __future__ import annotations

import logging

import anyio

from gateway.client.credentials.credential import SharedTokenCredential
from gateway.client.credentials.token_file import LoginRecord, TokenFile
from gateway.errors import CredentialError
from gateway.oauth import ClientAuthMethod, IssuedToken, TokenEndpoint

__all__ = ["StoredLogin"]

logger = logging.getLogger(__name__)

_AUTH_METHODS: dict[str | None, ClientAuthMethod] = {
    "client_secret_basic": "client_secret_basic",
    "client_secret_post": "client_secret_post",
}


class StoredLogin(SharedTokenCredential):
    """The token of a stored login (`TokenFile`).

    Args:
        file: where the login is stored.
        login_command: the command that logs in again, for messages (e.g. `adk-mcp-gateway login gw.json docs`).
    """

    def __init__(self, file: TokenFile, *, login_command: str) -> None:
        super().__init__()
        self.file = file
        self._login_command = login_command
        self._issued: IssuedToken | None = None
        self._lock = anyio.Lock()

    def describe(self) -> str:
        return f"a stored user login ({self.file.path})"

    def _login_needed(self, why: str) -> CredentialError:
        return CredentialError(f"{why} Log in with `{self._login_command}`.")

    async def token(self, *, rejected: str | None = None) -> str | None:
        """The stored token; renewed with the refresh token when it is about to expire or was just refused.

        Raises:
            CredentialError: there is no login, or it cannot be renewed (the message gives the login command).
        """
        async with self._lock:
            issued = self._issued
            if issued is None or not issued.fresh() or issued.access_token == rejected:
                # The file may hold newer tokens (a login, or another gateway process that renewed them).
                record = await anyio.to_thread.run_sync(self.file.read)
                if record is None or record.access_token is None:
                    raise self._login_needed(f"There is no stored login for {self.file.server_url}.")
                issued = record.issued()
                assert issued is not None
                if not issued.fresh() or issued.access_token == rejected:
                    issued = await self._renew(record, issued)
                self._issued = issued
            return issued.access_token

    async def _renew(self, record: LoginRecord, issued: IssuedToken) -> IssuedToken:
        if issued.refresh_token is None or record.token_endpoint is None:
            raise self._login_needed(f"The login for {self.file.server_url} expired and cannot be renewed.")
        client = record.client or {}
        endpoint = TokenEndpoint(
            record.token_endpoint,
            client.get("client_id"),
            client.get("client_secret"),
            _AUTH_METHODS.get(client.get("token_endpoint_auth_method"), "none"),
        )
        try:
            renewed = await endpoint.refresh(issued.refresh_token, scope=record.scope)
        except CredentialError as exc:
            raise self._login_needed(f"Renewing the login for {self.file.server_url} failed: {exc}") from exc
        await self.file.store_issued(renewed)
        logger.info("Renewed the login token for %s.", self.file.server_url)
        return renewed
