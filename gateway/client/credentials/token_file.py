"""`TokenFile`: a user login's tokens for one upstream, kept in a file only its owner can read (mode 0600).

Files live in `$ADK_MCP_GATEWAY_TOKEN_DIR`, else `$XDG_DATA_HOME/adk-mcp-gateway/tokens`, else
`~/.local/share/adk-mcp-gateway/tokens` — outside any project, so a token never lands in a repository. One file per
upstream (its config key and URL name it). Each write replaces the file atomically; the directory is created with
mode 0700. A `TokenFile` is also the MCP SDK's `TokenStorage`, which the `login` flow fills in.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from pathlib import Path
from typing import Any, Final

import anyio
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import BaseModel, ConfigDict, ValidationError

from gateway.errors import CredentialError
from gateway.oauth import IssuedToken

__all__ = ["TOKEN_DIR_ENV", "LoginRecord", "TokenFile", "token_dir"]

TOKEN_DIR_ENV: Final = "ADK_MCP_GATEWAY_TOKEN_DIR"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def token_dir() -> Path:
    """Where login tokens are kept (see the module docstring)."""
    configured = os.environ.get(TOKEN_DIR_ENV)
    if configured:
        return Path(configured).expanduser()
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "adk-mcp-gateway" / "tokens"


class LoginRecord(BaseModel):
    """What a login leaves behind: the client registered for the gateway, the tokens, and where to renew them."""

    model_config = ConfigDict(extra="ignore", hide_input_in_errors=True)

    server_url: str
    token_endpoint: str | None = None
    issuer: str | None = None
    client: dict[str, Any] | None = None
    access_token: str | None = None
    refresh_token: str | None = None
    expires_at: float | None = None
    scope: str | None = None

    def __repr__(self) -> str:
        return f"LoginRecord(server_url={self.server_url!r}, token_endpoint={self.token_endpoint!r})"

    __str__ = __repr__

    def issued(self) -> IssuedToken | None:
        """The stored access token, if any."""
        if self.access_token is None:
            return None
        return IssuedToken(self.access_token, self.expires_at, self.refresh_token, self.scope)


class TokenFile:
    """The stored login of one upstream (see the module docstring)."""

    def __init__(self, key: str, server_url: str, directory: Path | None = None) -> None:
        digest = hashlib.sha256(server_url.encode()).hexdigest()[:12]
        self.server_url = server_url
        self.path = (directory or token_dir()) / f"{_UNSAFE.sub('_', key)}-{digest}.json"

    # --- the record -----------------------------------------------------------------------------------------------

    def read(self) -> LoginRecord | None:
        """The stored record; None if there is none.

        Raises:
            CredentialError: the file exists but cannot be read or is not a login record.
        """
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise CredentialError(f"Cannot read the stored login {self.path}: {exc.strerror or exc}.") from exc
        try:
            return LoginRecord.model_validate_json(text)
        except ValidationError as exc:
            raise CredentialError(
                f"The stored login {self.path} is damaged ({exc.error_count()} problems); delete it and log in again."
            ) from exc

    def write(self, record: LoginRecord) -> None:
        """Replace the stored record (atomically; the file is readable by its owner only)."""
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.fchmod(descriptor, 0o600)
            with os.fdopen(descriptor, "w", encoding="utf-8") as file:
                json.dump(record.model_dump(mode="json", exclude_none=True), file, indent=2)
            os.replace(temporary, self.path)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise

    def _record(self) -> LoginRecord:
        return self.read() or LoginRecord(server_url=self.server_url)

    async def update(self, **changes: Any) -> LoginRecord:
        """Change some fields of the record and store it."""

        def apply() -> LoginRecord:
            record = self._record().model_copy(update=changes)
            self.write(record)
            return record

        return await anyio.to_thread.run_sync(apply)

    async def store_issued(self, issued: IssuedToken) -> None:
        """Store a renewed token (and its refresh token)."""
        await self.update(
            access_token=issued.access_token,
            refresh_token=issued.refresh_token,
            expires_at=issued.expires_at,
            scope=issued.scope,
        )

    # --- the MCP SDK's TokenStorage ------------------------------------------------------------------------------

    async def get_tokens(self) -> OAuthToken | None:
        """The stored tokens, with the time left as `expires_in`."""
        record = await anyio.to_thread.run_sync(self.read)
        if record is None or record.access_token is None:
            return None
        expires_in = None if record.expires_at is None else max(0, int(record.expires_at - time.time()))
        return OAuthToken(
            access_token=record.access_token,
            expires_in=expires_in,
            refresh_token=record.refresh_token,
            scope=record.scope,
        )

    async def set_tokens(self, tokens: OAuthToken) -> None:
        """Store tokens the SDK obtained (the expiry made absolute)."""
        expires_at = time.time() + tokens.expires_in if tokens.expires_in is not None else None
        await self.update(
            access_token=tokens.access_token,
            refresh_token=tokens.refresh_token,
            expires_at=expires_at,
            scope=tokens.scope,
        )

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        """The client registered for the gateway at the upstream's authorization server."""
        record = await anyio.to_thread.run_sync(self.read)
        if record is None or record.client is None:
            return None
        return OAuthClientInformationFull.model_validate(record.client)

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        """Store the client the SDK registered."""
        await self.update(client=client_info.model_dump(mode="json", exclude_none=True))
