"""`CredentialStore`: the users' credentials (ADK `AuthCredential`s), encrypted at rest in a `StateStore`.

A credential belongs to one principal and one `credential_key` (not to a session): a user who signed in once is
signed in for every session, on every replica that shares the state store. Each credential is sealed with AES-GCM
(the `cryptography` library) under the configured key, with the app, the principal and the credential key as
associated data, so a sealed value copied to another principal's or key's row does not open. The rows live in the
state store under an app name of their own (`<app>#credentials`), out of reach of `tool_context.state`.

The key comes from `$ADK_MCP_GATEWAY_CREDENTIAL_KEY` (or the `credential_keys` a `ToolServer` is given): one or
more comma-separated keys, each 32 random bytes in URL-safe base64. The first seals; all of them open, so a key
is rotated by putting the new one first. Make one with:

    python -c "import base64, secrets; print(base64.urlsafe_b64encode(secrets.token_bytes(32)).decode())"

A value that does not open (another key, tampering) reads as no credential, so the user is asked to sign in again.
Nothing here logs a credential.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import logging
import os
import secrets
from collections.abc import Sequence
from typing import Final

import pydantic
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from gateway.errors import ConfigError
from gateway.state.store import StateScope, StateStore
from gateway.tools.auth_credential import AuthCredential

__all__ = ["CREDENTIAL_KEY_ENV", "CredentialKeys", "CredentialStore"]

logger = logging.getLogger(__name__)

CREDENTIAL_KEY_ENV: Final = "ADK_MCP_GATEWAY_CREDENTIAL_KEY"
_KEY_BYTES: Final = 32
_NONCE_BYTES: Final = 12
_FORMAT: Final = "v1"
_PREFIX: Final = "user:credential:"
_MAKE_KEY: Final = (
    'python -c "import base64, secrets; print(base64.urlsafe_b64encode(secrets.token_bytes(32)).decode())"'
)


class CredentialKeys:
    """The keys that seal credentials: the first seals, every one opens.

    Raises:
        ConfigError: no key, or a key that is not 32 bytes of URL-safe base64 (the message says how to make one).
    """

    def __init__(self, keys: Sequence[str | bytes], *, source: str = "credential_keys") -> None:
        parsed: list[tuple[str, AESGCM]] = []
        for index, key in enumerate(keys):
            raw = key if isinstance(key, bytes) and len(key) == _KEY_BYTES else _decode(key, f"{source}[{index}]")
            kid = hashlib.sha256(raw).hexdigest()[:8]
            parsed.append((kid, AESGCM(raw)))
        if not parsed:
            raise ConfigError(f"{source} holds no key: give at least one. Make one with: {_MAKE_KEY}")
        self._keys = parsed

    @classmethod
    def from_env(cls) -> CredentialKeys | None:
        """The keys in `$ADK_MCP_GATEWAY_CREDENTIAL_KEY`, or None if it is unset or empty."""
        value = os.environ.get(CREDENTIAL_KEY_ENV, "")
        keys = [part.strip() for part in value.split(",") if part.strip()]
        return cls(keys, source=f"${CREDENTIAL_KEY_ENV}") if keys else None

    def seal(self, plaintext: bytes, associated: bytes) -> str:
        kid, aead = self._keys[0]
        nonce = secrets.token_bytes(_NONCE_BYTES)
        sealed = aead.encrypt(nonce, plaintext, associated)
        return f"{_FORMAT}.{kid}.{base64.urlsafe_b64encode(nonce + sealed).decode()}"

    def open(self, text: str, associated: bytes) -> bytes | None:
        """The plaintext, or None if no key opens `text` for `associated`."""
        fmt, _, rest = text.partition(".")
        kid, _, body = rest.partition(".")
        if fmt != _FORMAT:
            return None
        try:
            blob = base64.urlsafe_b64decode(body.encode())
        except (binascii.Error, ValueError):
            return None
        for key_id, aead in self._keys:
            if key_id != kid:
                continue
            try:
                return aead.decrypt(blob[:_NONCE_BYTES], blob[_NONCE_BYTES:], associated)
            except InvalidTag:
                return None
        return None


def _decode(key: str | bytes, where: str) -> bytes:
    text = key.decode() if isinstance(key, bytes) else key
    try:
        raw = base64.urlsafe_b64decode(text.strip().encode() + b"=" * (-len(text.strip()) % 4))
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != _KEY_BYTES:
        raise ConfigError(
            f"{where} is not a credential key: it must be {_KEY_BYTES} random bytes in URL-safe base64 "
            f"(44 characters). Make one with: {_MAKE_KEY}"
        )
    return raw


class CredentialStore:
    """Sealed credentials per principal and `credential_key`, in a `StateStore` (see the module docstring).

    Args:
        store: the state store (the server's own: SQLite, in memory, Redis).
        keys: the sealing keys.
        app_name: the server's name; credentials of one app are not another's.
    """

    def __init__(self, store: StateStore, keys: CredentialKeys, *, app_name: str) -> None:
        self._store = store
        self._keys = keys
        self._app_name = app_name

    def _scope(self, principal: str) -> StateScope:
        return StateScope(app_name=f"{self._app_name}#credentials", user_id=principal, session_id="")

    def _associated(self, principal: str, credential_key: str) -> bytes:
        return "\x00".join((self._app_name, principal, credential_key)).encode()

    async def load_all(self, principal: str) -> dict[str, AuthCredential]:
        """Every credential `principal` has, by credential key."""
        rows = await self._store.load(self._scope(principal))
        found: dict[str, AuthCredential] = {}
        for name, value in rows.items():
            if not name.startswith(_PREFIX) or not isinstance(value, str):
                continue
            key = name.removeprefix(_PREFIX)
            credential = self._open(principal, key, value)
            if credential is not None:
                found[key] = credential
        return found

    async def load(self, principal: str, credential_key: str) -> AuthCredential | None:
        """The credential `principal` has under `credential_key`, if any."""
        value = (await self._store.load(self._scope(principal))).get(_PREFIX + credential_key)
        return self._open(principal, credential_key, value) if isinstance(value, str) else None

    async def save(self, principal: str, credential_key: str, credential: AuthCredential) -> None:
        """Store (or replace) `principal`'s credential under `credential_key`."""
        plaintext = credential.model_dump_json(by_alias=True, exclude_none=True).encode()
        sealed = self._keys.seal(plaintext, self._associated(principal, credential_key))
        await self._store.apply(self._scope(principal), {_PREFIX + credential_key: sealed})

    async def delete(self, principal: str, credential_key: str) -> None:
        """Forget `principal`'s credential under `credential_key` (a revoked one: the user signs in again)."""
        await self._store.apply(self._scope(principal), {_PREFIX + credential_key: None})

    def _open(self, principal: str, credential_key: str, value: str) -> AuthCredential | None:
        plaintext = self._keys.open(value, self._associated(principal, credential_key))
        if plaintext is None:
            logger.warning(
                "The stored credential %r of principal %r does not open with the configured credential keys "
                "(another key, or changed); the user will be asked to sign in again.",
                credential_key,
                principal,
            )
            return None
        try:
            return AuthCredential.model_validate(json.loads(plaintext))
        except (ValueError, pydantic.ValidationError):
            return None
