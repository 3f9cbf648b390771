"""The artifact stores that survive a restart (SQLite beside the state, Redis for replicas): versions, scopes,
custom metadata, the size limit, and a second process reading what the first saved."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Literal

import anyio
import anyio.lowlevel
import pytest

from adapters import Media
from gateway.artifacts import ArtifactTooLargeError, artifact_service_for
from gateway.artifacts._stored import StoredArtifactService
from gateway.server import ToolServer
from gateway.state import InMemoryStateStore, SqliteStateStore
from gateway.state.redis_store import RedisStateStore
from gateway.tools.artifacts import InMemoryArtifactService

pytestmark = pytest.mark.anyio

Kind = Literal["sqlite", "redis"]
APP = "app"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # redis-py's asyncio client


@pytest.fixture(params=["sqlite", "redis"])
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[..., StoredArtifactService]:
    """Opens a store on the same place each time (a restart opens it again)."""
    kind: Kind = request.param
    prefix = f"test-{uuid.uuid4().hex}"

    def opener(max_bytes: int = 1024) -> StoredArtifactService:
        if kind == "sqlite":
            state = SqliteStateStore(tmp_path / "state.db")
        else:
            state = RedisStateStore(request.getfixturevalue("redis_url"), prefix=prefix)
        service = artifact_service_for(state, max_bytes=max_bytes)
        assert isinstance(service, StoredArtifactService)
        return service

    return opener


@pytest.fixture
async def store(open_store: Callable[..., StoredArtifactService]) -> AsyncIterator[StoredArtifactService]:
    service = open_store()
    yield service
    await service.aclose()


async def save(store: StoredArtifactService, filename: str, value: object, **options: object) -> int:
    user = str(options.pop("user", "ada"))
    session = str(options.pop("session", "s1"))
    return await store.save_artifact(
        app_name=APP,
        user_id=user,
        session_id=session,
        filename=filename,
        artifact=value,
        **options,  # type: ignore[arg-type]
    )


async def load(
    store: StoredArtifactService, filename: str, *, user: str = "ada", session: str = "s1", version: int | None = None
) -> object:
    return await store.load_artifact(app_name=APP, user_id=user, session_id=session, filename=filename, version=version)


async def test_saved_versions_count_from_zero_and_each_loads_as_saved(store: StoredArtifactService) -> None:
    assert await save(store, "notes.txt", "first") == 0
    assert await save(store, "notes.txt", "second") == 1

    assert await load(store, "notes.txt") == "second"
    assert await load(store, "notes.txt", version=0) == "first"
    assert await load(store, "notes.txt", version=7) is None
    assert await store.list_versions(app_name=APP, user_id="ada", session_id="s1", filename="notes.txt") == [0, 1]


async def test_text_bytes_media_and_json_come_back_as_the_kind_saved(store: StoredArtifactService) -> None:
    image = Media(data=b"\x89PNG\r\n", mime_type="image/png")
    for name, value in [("a.txt", "héllo"), ("b.bin", b"\x00\xff"), ("c.png", image), ("d.json", {"n": [1, 2]})]:
        await save(store, name, value)
        assert await load(store, name) == value


async def test_artifacts_outlive_the_store_that_saved_them(open_store: Callable[..., StoredArtifactService]) -> None:
    first = open_store()
    await save(first, "report.md", "# Q3", custom_metadata={"author": "ada"})
    await save(first, "user:profile.json", {"lang": "fr"})
    await first.aclose()

    second = open_store()
    try:
        assert await load(second, "report.md") == "# Q3"
        assert await load(second, "user:profile.json", session="another") == {"lang": "fr"}
        described = await second.get_artifact_version(
            app_name=APP, user_id="ada", session_id="s1", filename="report.md"
        )
    finally:
        await second.aclose()
    assert described is not None
    assert (described.version, described.custom_metadata, described.mime_type, described.size) == (
        0,
        {"author": "ada"},
        "text/plain",
        4,
    )


async def test_get_artifact_version_describes_the_version_asked_for(store: StoredArtifactService) -> None:
    await save(store, "chart.png", Media(data=b"1", mime_type="image/png"), custom_metadata={"step": 1})
    await save(store, "chart.png", Media(data=b"22", mime_type="image/png"), custom_metadata={"step": 2})

    first = await store.get_artifact_version(
        app_name=APP, user_id="ada", session_id="s1", filename="chart.png", version=0
    )
    latest = await store.get_artifact_version(app_name=APP, user_id="ada", session_id="s1", filename="chart.png")
    missing = await store.get_artifact_version(app_name=APP, user_id="ada", session_id="s1", filename="none.png")

    assert first is not None
    assert (first.custom_metadata, first.size) == ({"step": 1}, 1)
    assert latest is not None
    assert (latest.version, latest.custom_metadata) == (1, {"step": 2})
    assert missing is None


async def test_an_artifact_over_the_limit_is_refused_with_the_limit_named(store: StoredArtifactService) -> None:
    with pytest.raises(ArtifactTooLargeError, match=r"2000 bytes, more than the limit of 1024 bytes.*maxArtifactBytes"):
        await save(store, "big.bin", b"x" * 2000)

    assert await load(store, "big.bin") is None


async def test_session_files_stay_in_their_session_and_user_files_with_their_user(store: StoredArtifactService) -> None:
    await save(store, "draft.txt", "mine")
    await save(store, "user:prefs.json", {"theme": "dark"})

    assert await store.list_artifact_keys(app_name=APP, user_id="ada", session_id="s1") == [
        "draft.txt",
        "user:prefs.json",
    ]
    assert await store.list_artifact_keys(app_name=APP, user_id="ada", session_id="s2") == ["user:prefs.json"]
    assert await store.list_artifact_keys(app_name=APP, user_id="bob", session_id="s1") == []
    assert await load(store, "draft.txt", session="s2") is None
    assert await load(store, "draft.txt", user="bob") is None


async def test_concurrent_saves_each_get_a_distinct_version(store: StoredArtifactService) -> None:
    versions: list[int] = []

    async def save_one(n: int) -> None:
        await anyio.lowlevel.checkpoint()
        versions.append(await save(store, "log.txt", str(n)))

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            for n in range(20):
                tg.start_soon(save_one, n)

    assert sorted(versions) == list(range(20))


async def test_a_deleted_file_and_an_ended_session_leave_the_user_files(store: StoredArtifactService) -> None:
    await save(store, "a.txt", "a")
    await save(store, "b.txt", "b")
    await save(store, "user:keep.txt", "k")

    await store.delete_artifact(app_name=APP, user_id="ada", session_id="s1", filename="a.txt")
    assert await store.list_artifact_keys(app_name=APP, user_id="ada", session_id="s1") == ["b.txt", "user:keep.txt"]
    await store.delete_session(app_name=APP, user_id="ada", session_id="s1")

    assert await store.list_artifact_keys(app_name=APP, user_id="ada", session_id="s1") == ["user:keep.txt"]
    assert await save(store, "a.txt", "again") == 0


async def test_a_value_no_store_can_keep_is_refused_saying_what_to_save(store: StoredArtifactService) -> None:
    with pytest.raises(TypeError, match="save text"):
        await save(store, "thing", object())


async def test_the_in_memory_state_store_gets_in_memory_artifacts() -> None:
    assert isinstance(artifact_service_for(InMemoryStateStore()), InMemoryArtifactService)


async def test_the_retention_sweep_forgets_idle_sessions_files_and_keeps_users_files(
    store: StoredArtifactService,
) -> None:
    await save(store, "old.txt", "idle", session="idle")
    await save(store, "user:keep.txt", "mine", session="idle")
    before = time.time()
    await save(store, "new.txt", "busy", session="busy")

    assert await store.forget_idle_sessions(APP, before - 3600) == 0
    assert await store.forget_idle_sessions(APP, before) == 1

    assert await store.list_artifact_keys(app_name=APP, user_id="ada", session_id="idle") == ["user:keep.txt"]
    assert await store.list_artifact_keys(app_name=APP, user_id="ada", session_id="busy") == [
        "new.txt",
        "user:keep.txt",
    ]


async def test_a_servers_retention_sweep_reaches_its_artifacts(tmp_path: Path) -> None:
    server = ToolServer([], state_store=SqliteStateStore(tmp_path / "state.db"), session_retention=1e-9)
    service = server.artifact_service
    await service.save_artifact(
        app_name=server.name, user_id="ada", session_id="meta:k", filename="a.txt", artifact="a"
    )

    await server.retention.sweep()

    assert await service.list_artifact_keys(app_name=server.name, user_id="ada", session_id="meta:k") == []
    await server.aclose()


async def test_names_with_percent_signs_and_colons_are_kept_apart(store: StoredArtifactService) -> None:
    await save(store, "50%.txt", "half", user="ann:1", session="meta:k%3A")
    await save(store, "50%.txt", "other", user="ann", session="1:meta:k%3A")

    assert await load(store, "50%.txt", user="ann:1", session="meta:k%3A") == "half"
    assert await load(store, "50%.txt", user="ann", session="1:meta:k%3A") == "other"
    assert await store.list_artifact_keys(app_name=APP, user_id="ann:1", session_id="meta:k%3A") == ["50%.txt"]
