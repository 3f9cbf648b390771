from __future__ import annotations

import math
import sqlite3
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.errors import ConfigError, StateConflictError
from gateway.state import InMemoryStateStore, SqliteStateStore, StateScope, StateStore
from gateway.state.redis_store import RedisStateStore
from gateway.state.sqlite_store import SCHEMA_VERSION, default_state_path
from gateway.tools.state import State, scope_of

StoreFactory = Callable[[], AbstractAsyncContextManager[StateStore]]

ALICE_ONE = StateScope("app", "alice", "session-1")
ALICE_TWO = StateScope("app", "alice", "session-2")
BOB_ONE = StateScope("app", "bob", "session-1")
OTHER_APP = StateScope("other-app", "alice", "session-1")


@pytest.fixture(params=["memory", "sqlite", "redis"])
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> StoreFactory:
    """Opens a fresh, empty store of the parametrized kind each time it is called."""
    if request.param == "memory":
        return InMemoryStateStore
    if request.param == "redis":
        # One server for the run; a fresh key prefix makes a fresh, empty store.
        url: str = request.getfixturevalue("redis_url")
        return lambda: RedisStateStore(url, prefix=f"test-{uuid.uuid4().hex}")
    return lambda: SqliteStateStore(tmp_path / f"{uuid.uuid4().hex}.db")


@pytest.fixture
async def store(open_store: StoreFactory) -> AsyncIterator[StateStore]:
    async with open_store() as opened:
        yield opened


# -- scopes ----------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_new_store_holds_no_state(store: StateStore) -> None:
    assert await store.load(ALICE_ONE) == {}


@pytest.mark.anyio
async def test_a_call_loads_what_an_earlier_call_of_its_session_wrote(store: StateStore) -> None:
    await store.apply(ALICE_ONE, {"count": 1, "user:name": "Alice", "app:motd": "hi"})
    assert await store.load(ALICE_ONE) == {"count": 1, "user:name": "Alice", "app:motd": "hi"}


@pytest.mark.anyio
async def test_two_sessions_never_see_each_others_session_keys(store: StateStore) -> None:
    await store.apply(ALICE_ONE, {"cart": ["apple"]})
    await store.apply(ALICE_TWO, {"cart": ["pear"]})
    assert await store.load(ALICE_ONE) == {"cart": ["apple"]}
    assert await store.load(ALICE_TWO) == {"cart": ["pear"]}


@pytest.mark.anyio
async def test_user_keys_are_shared_by_every_session_of_the_user(store: StateStore) -> None:
    await store.apply(ALICE_ONE, {"user:name": "Alice"})
    assert await store.load(ALICE_TWO) == {"user:name": "Alice"}


@pytest.mark.anyio
async def test_two_users_never_see_each_others_user_keys(store: StateStore) -> None:
    await store.apply(ALICE_ONE, {"user:name": "Alice"})
    await store.apply(BOB_ONE, {"user:name": "Bob"})
    assert await store.load(ALICE_TWO) == {"user:name": "Alice"}
    assert await store.load(BOB_ONE) == {"user:name": "Bob"}


@pytest.mark.anyio
async def test_a_session_id_reused_by_another_user_names_another_session(store: StateStore) -> None:
    await store.apply(ALICE_ONE, {"secret": "alice's"})
    assert await store.load(BOB_ONE) == {}


@pytest.mark.anyio
async def test_app_keys_are_shared_by_every_user_and_session_of_the_app(store: StateStore) -> None:
    await store.apply(ALICE_ONE, {"app:motd": "hello"})
    for scope in (ALICE_ONE, ALICE_TWO, BOB_ONE):
        assert await store.load(scope) == {"app:motd": "hello"}


@pytest.mark.anyio
async def test_another_app_shares_no_state(store: StateStore) -> None:
    await store.apply(ALICE_ONE, {"count": 1, "user:name": "Alice", "app:motd": "hi"})
    assert await store.load(OTHER_APP) == {}


@pytest.mark.anyio
async def test_temp_keys_are_never_stored(store: StateStore) -> None:
    await store.apply(ALICE_ONE, {"temp:scratch": [1, 2], "kept": True})
    assert await store.load(ALICE_ONE) == {"kept": True}


@pytest.mark.anyio
async def test_a_temp_key_may_hold_a_value_that_is_not_json(store: StateStore) -> None:
    await store.apply(ALICE_ONE, {"temp:lock": anyio.Lock(), "kept": 1})
    assert await store.load(ALICE_ONE) == {"kept": 1}


@pytest.mark.anyio
async def test_clearing_a_session_forgets_only_its_own_keys(store: StateStore) -> None:
    await store.apply(ALICE_ONE, {"cart": ["apple"], "user:name": "Alice", "app:motd": "hi"})
    await store.apply(ALICE_TWO, {"cart": ["pear"]})
    await store.clear_session(ALICE_ONE)
    assert await store.load(ALICE_ONE) == {"user:name": "Alice", "app:motd": "hi"}
    assert await store.load(ALICE_TWO) == {"cart": ["pear"], "user:name": "Alice", "app:motd": "hi"}


@pytest.mark.anyio
async def test_names_that_share_a_separator_never_share_state(store: StateStore) -> None:
    await store.apply(StateScope("a:b", "c", "d"), {"x": 1, "user:x": 1, "app:x": 1})
    for scope in (
        StateScope("a", "b:c", "d"),
        StateScope("a", "b", "c:d"),
        StateScope("{a:b}", "c", "d"),
        StateScope("a%3Ab", "c", "d"),
    ):
        assert await store.load(scope) == {}
    assert await store.load(StateScope("a:b", "c:d", "")) == {"app:x": 1}


@pytest.mark.anyio
async def test_forgetting_idle_sessions_deletes_only_the_sessions_not_written_since(store: StateStore) -> None:
    await store.apply(ALICE_ONE, {"cart": ["apple"], "user:name": "Alice", "app:motd": "hi"})
    await store.apply(BOB_ONE, {"cart": ["pear"]})
    await store.apply(OTHER_APP, {"cart": ["fig"]})
    since = time.time()
    await store.apply(ALICE_TWO, {"cart": ["plum"]})

    assert await store.forget_idle_sessions("app", since) == 2

    assert await store.load(ALICE_ONE) == {"user:name": "Alice", "app:motd": "hi"}
    assert await store.load(BOB_ONE) == {"app:motd": "hi"}
    assert await store.load(ALICE_TWO) == {"cart": ["plum"], "user:name": "Alice", "app:motd": "hi"}
    assert await store.load(OTHER_APP) == {"cart": ["fig"]}
    assert await store.forget_idle_sessions("app", since) == 0


@pytest.mark.anyio
async def test_a_session_written_again_is_no_longer_idle(store: StateStore) -> None:
    await store.apply(ALICE_ONE, {"cart": ["apple"]})
    since = time.time()
    await store.apply(ALICE_ONE, {"count": 1})
    assert await store.forget_idle_sessions("app", since) == 0
    assert await store.load(ALICE_ONE) == {"cart": ["apple"], "count": 1}


@pytest.mark.anyio
async def test_a_cleared_session_is_not_counted_again_as_idle(store: StateStore) -> None:
    await store.apply(ALICE_ONE, {"cart": ["apple"]})
    await store.clear_session(ALICE_ONE)
    assert await store.forget_idle_sessions("app", time.time() + 60) == 0


# -- values ----------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_later_write_to_a_key_replaces_the_earlier_one(store: StateStore) -> None:
    await store.apply(ALICE_ONE, {"count": 1, "other": "kept"})
    await store.apply(ALICE_ONE, {"count": 2})
    assert await store.load(ALICE_ONE) == {"count": 2, "other": "kept"}


@pytest.mark.anyio
async def test_a_key_set_to_none_is_kept_as_none(store: StateStore) -> None:
    await store.apply(ALICE_ONE, {"count": 1})
    await store.apply(ALICE_ONE, {"count": None})
    assert await store.load(ALICE_ONE) == {"count": None}


@pytest.mark.anyio
async def test_values_come_back_as_json_decodes_them(store: StateStore) -> None:
    await store.apply(ALICE_ONE, {"pair": (1, 2), "big": 2**80, "ratio": 0.1, "text": "naïve \ud800"})
    assert await store.load(ALICE_ONE) == {"pair": [1, 2], "big": 2**80, "ratio": 0.1, "text": "naïve \ud800"}


@pytest.mark.anyio
async def test_changing_a_loaded_value_does_not_change_the_store(store: StateStore) -> None:
    await store.apply(ALICE_ONE, {"cart": {"items": ["apple"]}})
    loaded = await store.load(ALICE_ONE)
    loaded["cart"]["items"].append("pear")
    assert await store.load(ALICE_ONE) == {"cart": {"items": ["apple"]}}


@pytest.mark.anyio
async def test_changing_an_applied_value_afterwards_does_not_change_the_store(store: StateStore) -> None:
    cart = ["apple"]
    await store.apply(ALICE_ONE, {"cart": cart})
    cart.append("pear")
    assert await store.load(ALICE_ONE) == {"cart": ["apple"]}


def _circular() -> list[Any]:
    value: list[Any] = []
    value.append(value)
    return value


@pytest.mark.anyio
@pytest.mark.parametrize(
    "bad",
    [object(), {1, 2}, b"bytes", math.nan, math.inf, _circular(), {"nested": [object()]}, {(1, 2): "tuple key"}],
    ids=["object", "set", "bytes", "nan", "inf", "circular", "nested", "tuple-key"],
)
async def test_a_value_that_is_not_json_is_a_type_error_naming_the_key_and_nothing_is_written(
    store: StateStore, bad: object
) -> None:
    await store.apply(ALICE_ONE, {"before": 1})
    with pytest.raises(TypeError, match="'user:broken'"):
        await store.apply(ALICE_ONE, {"count": 2, "app:flag": True, "user:broken": bad, "after": 3})
    assert await store.load(ALICE_ONE) == {"before": 1}


@pytest.mark.anyio
async def test_a_key_that_is_not_a_string_is_a_type_error(store: StateStore) -> None:
    with pytest.raises(TypeError, match="must be strings"):
        await store.apply(ALICE_ONE, {1: "one"})  # pyright: ignore[reportArgumentType]
    assert await store.load(ALICE_ONE) == {}


# -- concurrency -----------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_concurrent_calls_on_one_session_writing_different_keys_all_keep_their_change(
    store: StateStore,
) -> None:
    await store.apply(ALICE_ONE, {"existing": 0})

    async def call(index: int) -> None:
        state = State(await store.load(ALICE_ONE))
        await anyio.lowlevel.checkpoint()  # let the other calls load the same state before this one writes
        state[f"key-{index}"] = index
        await store.apply(ALICE_ONE, state.persistent_delta())

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            for index in range(50):
                tg.start_soon(call, index)

    assert await store.load(ALICE_ONE) == {"existing": 0, **{f"key-{index}": index for index in range(50)}}


@pytest.mark.anyio
async def test_a_delta_computed_from_a_value_that_changed_since_is_refused_whole(store: StateStore) -> None:
    await store.apply(ALICE_ONE, {"app:count": 1, "user:count": 1})
    first, second = State(await store.load(ALICE_ONE)), State(await store.load(ALICE_TWO))
    for state in (first, second):
        state["app:count"] += 1
        state["user:count"] += 1
        state["note"] = "mine"
    await store.apply(ALICE_ONE, first.persistent_delta(), expected=first.reads())
    with pytest.raises(StateConflictError) as refused:
        await store.apply(ALICE_TWO, second.persistent_delta(), expected=second.reads())
    assert refused.value.keys == ["app:count", "user:count"]
    assert await store.load(ALICE_TWO) == {"app:count": 2, "user:count": 2}


@pytest.mark.anyio
async def test_a_key_that_was_absent_when_read_and_was_written_since_is_a_conflict(store: StateStore) -> None:
    stale = State(await store.load(ALICE_ONE))
    stale["app:first"] = stale.get("app:first") or "stale"
    await store.apply(ALICE_TWO, {"app:first": "winner"})
    with pytest.raises(StateConflictError):
        await store.apply(ALICE_ONE, stale.persistent_delta(), expected=stale.reads())
    assert (await store.load(ALICE_ONE))["app:first"] == "winner"


@pytest.mark.anyio
async def test_a_list_changed_in_place_is_checked_against_the_list_as_it_was_read(store: StateStore) -> None:
    await store.apply(ALICE_ONE, {"notes": ["a"]})
    first, second = State(await store.load(ALICE_ONE)), State(await store.load(ALICE_ONE))
    first["notes"].append("b")
    second["notes"].append("c")
    await store.apply(ALICE_ONE, first.persistent_delta(), expected=first.reads())
    with pytest.raises(StateConflictError):
        await store.apply(ALICE_ONE, second.persistent_delta(), expected=second.reads())
    assert await store.load(ALICE_ONE) == {"notes": ["a", "b"]}


@pytest.mark.anyio
async def test_values_that_still_hold_and_writes_without_reads_are_applied(store: StateStore) -> None:
    await store.apply(ALICE_ONE, {"app:count": 1, "other": "x"})
    state = State(await store.load(ALICE_ONE))
    state["app:count"] += 1
    state["blind"] = "written without reading"
    await store.apply(ALICE_TWO, {"app:unrelated": True, "other": "y"})
    await store.apply(ALICE_ONE, state.persistent_delta(), expected=state.reads())
    assert (await store.load(ALICE_ONE))["app:count"] == 2


# -- with State ------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_state_round_trips_through_the_store(store: StateStore) -> None:
    await store.apply(ALICE_ONE, {"cart": ["apple"], "count": 1, "user:visits": 3, "app:motd": "hi"})

    state = State(await store.load(ALICE_ONE))
    state["cart"].append("pear")
    state["count"] += 1
    state["user:name"] = "Alice"
    state["temp:scratch"] = "gone"
    await store.apply(ALICE_ONE, state.persistent_delta())

    assert await store.load(ALICE_ONE) == {
        "cart": ["apple", "pear"],
        "count": 2,
        "user:visits": 3,
        "user:name": "Alice",
        "app:motd": "hi",
    }


# -- against a model -------------------------------------------------------------------------------------

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3),
    max_leaves=6,
)
_keys = st.sampled_from([prefix + name for prefix in ("", "user:", "app:", "temp:") for name in ("a", "b")])
_scopes = st.builds(
    StateScope, st.sampled_from(["app", "other"]), st.sampled_from(["u1", "u2"]), st.sampled_from(["s1", "s2"])
)
_operations = st.lists(
    st.tuples(st.just("apply"), _scopes, st.dictionaries(_keys, _json_values, max_size=4))
    | st.tuples(st.just("clear"), _scopes, st.just(dict[str, Any]())),
    max_size=12,
)
_ALL_SCOPES = [
    StateScope(app, user, session) for app in ("app", "other") for user in ("u1", "u2") for session in ("s1", "s2")
]


class _Model:
    """What a store should hold: a plain dict per owner."""

    def __init__(self) -> None:
        self.owners: dict[tuple[str, ...], dict[str, Any]] = {}

    def owner(self, scope: StateScope, key: str) -> tuple[str, ...]:
        kind = scope_of(key)
        if kind == "app":
            return ("app", scope.app_name)
        if kind == "user":
            return ("user", scope.app_name, scope.user_id)
        return ("session", scope.app_name, scope.user_id, scope.session_id)

    def apply(self, scope: StateScope, delta: dict[str, Any]) -> None:
        for key, value in delta.items():
            if scope_of(key) != "temp":
                self.owners.setdefault(self.owner(scope, key), {})[key] = value

    def clear(self, scope: StateScope) -> None:
        self.owners.pop(self.owner(scope, ""), None)

    def load(self, scope: StateScope) -> dict[str, Any]:
        return {
            **self.owners.get(self.owner(scope, ""), {}),
            **self.owners.get(self.owner(scope, "user:"), {}),
            **self.owners.get(self.owner(scope, "app:"), {}),
        }


# The factory opens a fresh store for every example, so the function-scoped fixture carries nothing over.
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(operations=_operations)
@pytest.mark.anyio
async def test_any_sequence_of_deltas_leaves_the_store_as_it_leaves_a_dict_per_owner(
    open_store: StoreFactory, operations: list[tuple[str, StateScope, dict[str, Any]]]
) -> None:
    model = _Model()
    async with open_store() as store:
        for operation, scope, delta in operations:
            if operation == "apply":
                await store.apply(scope, delta)
                model.apply(scope, delta)
            else:
                await store.clear_session(scope)
                model.clear(scope)
        for scope in _ALL_SCOPES:
            assert await store.load(scope) == model.load(scope)


# -- SQLite ----------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_sqlite_state_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    async with SqliteStateStore(path) as first:
        await first.apply(ALICE_ONE, {"count": 1, "user:name": "Alice", "app:motd": "hi", "temp:x": 0})
    async with SqliteStateStore(path) as second:
        assert await second.load(ALICE_ONE) == {"count": 1, "user:name": "Alice", "app:motd": "hi"}


@pytest.mark.anyio
async def test_two_sqlite_stores_on_one_file_see_each_others_writes(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    async with SqliteStateStore(path) as first, SqliteStateStore(path) as second:
        await first.apply(ALICE_ONE, {"from": "first"})
        await second.apply(ALICE_ONE, {"also": "second"})
        assert await first.load(ALICE_ONE) == {"from": "first", "also": "second"}


@pytest.mark.anyio
async def test_sqlite_creates_the_parent_directory(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "deeper" / "state.db"
    async with SqliteStateStore(path) as store:
        await store.apply(ALICE_ONE, {"count": 1})
    assert path.is_file()


@pytest.mark.anyio
async def test_sqlite_writes_ahead_with_a_schema_version(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    async with SqliteStateStore(path):
        connection = sqlite3.connect(path)
        try:
            assert connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)
            assert connection.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        finally:
            connection.close()


@pytest.mark.anyio
async def test_a_file_that_is_not_a_sqlite_database_is_a_config_error_naming_the_path(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    path.write_bytes(b"this is not a database, just garbage bytes\x00\xff" * 100)
    with pytest.raises(ConfigError, match="not a database") as caught:
        async with SqliteStateStore(path):
            pass
    assert str(path) in str(caught.value)


@pytest.mark.anyio
async def test_a_corrupt_file_fails_the_first_call_when_the_store_was_not_entered(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    path.write_bytes(b"\xde\xad\xbe\xef" * 1000)
    store = SqliteStateStore(path)
    try:
        with pytest.raises(ConfigError) as caught:
            await store.load(ALICE_ONE)
        assert str(path) in str(caught.value)
    finally:
        await store.aclose()


@pytest.mark.anyio
async def test_a_path_that_cannot_be_opened_is_a_config_error_naming_the_path(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        async with SqliteStateStore(tmp_path):  # a directory
            pass
    assert str(tmp_path) in str(caught.value)


@pytest.mark.anyio
async def test_a_parent_that_is_a_file_is_a_config_error_naming_the_path(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a directory", encoding="utf-8")
    path = blocker / "state.db"
    with pytest.raises(ConfigError) as caught:
        async with SqliteStateStore(path):
            pass
    assert str(path) in str(caught.value)


@pytest.mark.anyio
async def test_a_database_from_a_newer_version_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    connection = sqlite3.connect(path)
    try:
        connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    finally:
        connection.close()
    with pytest.raises(ConfigError, match="newer") as caught:
        async with SqliteStateStore(path):
            pass
    assert str(path) in str(caught.value)


@pytest.mark.anyio
async def test_a_closed_sqlite_store_refuses_calls_and_closes_again_quietly(tmp_path: Path) -> None:
    store = SqliteStateStore(tmp_path / "state.db")
    await store.apply(ALICE_ONE, {"count": 1})
    await store.aclose()
    await store.aclose()
    with pytest.raises(RuntimeError, match="closed"):
        await store.load(ALICE_ONE)


# -- default path ----------------------------------------------------------------------------------------


def test_the_state_path_variable_chooses_the_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ADK_MCP_GATEWAY_STATE", str(tmp_path / "mine.db"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert default_state_path() == tmp_path / "mine.db"


def test_the_default_state_path_follows_xdg_state_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("ADK_MCP_GATEWAY_STATE", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert default_state_path() == tmp_path / "adk-mcp-gateway" / "state.db"


@pytest.mark.parametrize("xdg", [None, "", "relative/dir"])
def test_without_a_usable_xdg_state_home_the_state_lives_under_the_home_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, xdg: str | None
) -> None:
    monkeypatch.delenv("ADK_MCP_GATEWAY_STATE", raising=False)
    if xdg is None:
        monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_STATE_HOME", xdg)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_state_path() == tmp_path / ".local" / "state" / "adk-mcp-gateway" / "state.db"


@pytest.mark.anyio
async def test_stores_opening_one_new_file_at_once_all_open(tmp_path: Path) -> None:
    """Replicas or workers that start together open one new state file at once: none of them may fail.

    Two connections switching a new file to WAL at the same moment deadlock on its lock, and SQLite answers one of
    them "database is locked" at once, without waiting (seen as a failed start-up of one of two servers).
    """
    scope = StateScope(app_name="app", user_id="user", session_id="session")
    failures: list[str] = []
    for attempt in range(60):
        stores = [SqliteStateStore(tmp_path / f"state-{attempt}.db") for _ in range(8)]

        async def load(store: SqliteStateStore) -> None:
            try:
                await store.load(scope)
            except ConfigError as exc:
                failures.append(str(exc))

        async with anyio.create_task_group() as tg:
            for store in stores:
                tg.start_soon(load, store)
        for store in stores:
            await store.aclose()
    assert failures == []
