"""Credentials per principal and credential key, sealed with the configured key, in any state store."""

from __future__ import annotations

import base64
import json
import secrets
import sqlite3
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest

from gateway.errors import ConfigError
from gateway.state import CredentialKeys, CredentialStore, InMemoryStateStore, SqliteStateStore, StateScope, StateStore
from gateway.state.credential_store import CREDENTIAL_KEY_ENV
from gateway.tools import AuthCredential, AuthCredentialTypes, OAuth2Auth

StoreFactory = Callable[[], AbstractAsyncContextManager[StateStore]]


def new_key() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()


def token(access: str) -> AuthCredential:
    return AuthCredential(
        auth_type=AuthCredentialTypes.OAUTH2,
        oauth2=OAuth2Auth(access_token=access, refresh_token=f"refresh-{access}", expires_at=2_000_000_000),
    )


@pytest.fixture(params=["memory", "sqlite"])
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> StoreFactory:
    if request.param == "memory":
        return InMemoryStateStore
    return lambda: SqliteStateStore(tmp_path / f"{uuid.uuid4().hex}.db")


@pytest.fixture
async def store(open_store: StoreFactory) -> AsyncIterator[StateStore]:
    async with open_store() as opened:
        yield opened


@pytest.mark.anyio
async def test_a_saved_credential_loads_for_its_principal_and_key_only(store: StateStore) -> None:
    credentials = CredentialStore(store, CredentialKeys([new_key()]), app_name="app")
    await credentials.save("alice", "calendar", token("alice-token"))
    assert await credentials.load("alice", "calendar") == token("alice-token")
    assert await credentials.load("alice", "mail") is None
    assert await credentials.load("bob", "calendar") is None
    assert await credentials.load_all("alice") == {"calendar": token("alice-token")}
    assert await CredentialStore(store, CredentialKeys([new_key()]), app_name="other").load_all("alice") == {}


@pytest.mark.anyio
async def test_credentials_are_not_tool_state_of_any_session_of_the_user(store: StateStore) -> None:
    credentials = CredentialStore(store, CredentialKeys([new_key()]), app_name="app")
    await credentials.save("alice", "calendar", token("alice-token"))
    assert await store.load(StateScope("app", "alice", "alice/session")) == {}


@pytest.mark.anyio
async def test_a_deleted_credential_is_gone(store: StateStore) -> None:
    credentials = CredentialStore(store, CredentialKeys([new_key()]), app_name="app")
    await credentials.save("alice", "calendar", token("a"))
    await credentials.delete("alice", "calendar")
    assert await credentials.load("alice", "calendar") is None
    assert await credentials.load_all("alice") == {}


@pytest.mark.anyio
async def test_the_sqlite_file_holds_no_token_in_the_clear(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    async with SqliteStateStore(path) as store:
        await CredentialStore(store, CredentialKeys([new_key()]), app_name="app").save("alice", "k", token("tok-PLAIN"))
    dump = "\n".join(sqlite3.connect(path).iterdump())
    assert "alice" in dump
    assert "tok-PLAIN" not in dump
    assert "refresh-tok-PLAIN" not in dump


@pytest.mark.anyio
async def test_a_rotated_key_still_opens_what_the_old_key_sealed_and_another_key_opens_nothing(
    store: StateStore,
) -> None:
    old, new = new_key(), new_key()
    await CredentialStore(store, CredentialKeys([old]), app_name="app").save("alice", "k", token("a"))
    assert await CredentialStore(store, CredentialKeys([new, old]), app_name="app").load("alice", "k") == token("a")
    assert await CredentialStore(store, CredentialKeys([new]), app_name="app").load("alice", "k") is None


@pytest.mark.anyio
async def test_a_sealed_value_copied_to_another_principal_does_not_open(store: StateStore) -> None:
    keys = CredentialKeys([new_key()])
    credentials = CredentialStore(store, keys, app_name="app")
    await credentials.save("alice", "k", token("alice"))
    sealed = (await store.load(StateScope("app#credentials", "alice", "")))["user:credential:k"]
    await store.apply(StateScope("app#credentials", "mallory", ""), {"user:credential:k": sealed})
    assert await credentials.load("mallory", "k") is None
    assert json.dumps(sealed).count("alice") == 0


def test_a_malformed_key_is_a_config_error_saying_how_to_make_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CREDENTIAL_KEY_ENV, "too-short")
    with pytest.raises(ConfigError, match=r"ADK_MCP_GATEWAY_CREDENTIAL_KEY.*32 random bytes.*secrets\.token_bytes"):
        CredentialKeys.from_env()
    monkeypatch.setenv(CREDENTIAL_KEY_ENV, "")
    assert CredentialKeys.from_env() is None
    monkeypatch.setenv(CREDENTIAL_KEY_ENV, f"{new_key()}, {new_key()}")
    assert CredentialKeys.from_env() is not None
