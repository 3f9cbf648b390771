from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from gateway.tools.artifacts import ArtifactService, InMemoryArtifactService

pytestmark = pytest.mark.anyio

APP = "app"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def service() -> ArtifactService:
    return InMemoryArtifactService()


async def save(
    service: ArtifactService, filename: str, artifact: object, *, user: str = "ada", session: str = "s1"
) -> int:
    return await service.save_artifact(
        app_name=APP, user_id=user, session_id=session, filename=filename, artifact=artifact
    )


async def load(
    service: ArtifactService,
    filename: str,
    *,
    user: str = "ada",
    session: str = "s1",
    version: int | None = None,
) -> object:
    return await service.load_artifact(
        app_name=APP, user_id=user, session_id=session, filename=filename, version=version
    )


async def keys(service: ArtifactService, *, user: str = "ada", session: str = "s1") -> list[str]:
    return await service.list_artifact_keys(app_name=APP, user_id=user, session_id=session)


# -- versions --------------------------------------------------------------------------------------------


async def test_each_save_of_a_filename_returns_the_next_version_starting_at_zero(
    service: ArtifactService,
) -> None:
    assert [await save(service, "report.txt", f"draft {n}") for n in range(3)] == [0, 1, 2]
    assert await save(service, "other.txt", "x") == 0


async def test_loading_without_a_version_returns_the_latest(service: ArtifactService) -> None:
    await save(service, "report.txt", "first")
    await save(service, "report.txt", "second")

    assert await load(service, "report.txt") == "second"


async def test_loading_a_version_returns_that_version(service: ArtifactService) -> None:
    await save(service, "report.txt", "first")
    await save(service, "report.txt", "second")

    assert await load(service, "report.txt", version=0) == "first"
    assert await load(service, "report.txt", version=1) == "second"


@pytest.mark.parametrize("version", [2, -1])
async def test_loading_a_version_that_does_not_exist_returns_none(service: ArtifactService, version: int) -> None:
    await save(service, "report.txt", "first")
    await save(service, "report.txt", "second")

    assert await load(service, "report.txt", version=version) is None


async def test_loading_a_missing_file_returns_none(service: ArtifactService) -> None:
    assert await load(service, "missing.txt") is None


async def test_list_versions_returns_every_version_in_order(service: ArtifactService) -> None:
    for n in range(3):
        await save(service, "report.txt", n)

    versions = await service.list_versions(app_name=APP, user_id="ada", session_id="s1", filename="report.txt")
    missing = await service.list_versions(app_name=APP, user_id="ada", session_id="s1", filename="none.txt")

    assert versions == [0, 1, 2]
    assert missing == []


async def test_artifacts_are_stored_and_returned_as_given(service: ArtifactService) -> None:
    payload = {"mime_type": "image/png", "data": b"\x89PNG"}

    await save(service, "image.png", payload)

    assert await load(service, "image.png") is payload


async def test_concurrent_saves_of_one_filename_each_get_a_distinct_version(service: ArtifactService) -> None:
    versions: list[int] = []

    async def save_one(n: int) -> None:
        await anyio.lowlevel.checkpoint()
        versions.append(await save(service, "log.txt", n))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for n in range(50):
                tg.start_soon(save_one, n)

    assert sorted(versions) == list(range(50))


# -- listing and scopes ----------------------------------------------------------------------------------


async def test_listing_returns_the_sessions_files_and_the_users_files_sorted(
    service: ArtifactService,
) -> None:
    await save(service, "b.txt", "b")
    await save(service, "user:profile.json", "{}")
    await save(service, "a.txt", "a")
    await save(service, "a.txt", "a again")

    assert await keys(service) == ["a.txt", "b.txt", "user:profile.json"]


async def test_a_session_file_is_not_visible_from_another_session(service: ArtifactService) -> None:
    await save(service, "notes.txt", "mine", session="s1")

    assert await load(service, "notes.txt", session="s2") is None
    assert await keys(service, session="s2") == []


async def test_a_user_file_is_visible_from_another_session_of_the_same_user(service: ArtifactService) -> None:
    await save(service, "user:profile.json", "v0", session="s1")

    assert await save(service, "user:profile.json", "v1", session="s2") == 1
    assert await load(service, "user:profile.json", session="s3") == "v1"
    assert await keys(service, session="s3") == ["user:profile.json"]


async def test_a_user_file_is_not_visible_to_another_user(service: ArtifactService) -> None:
    await save(service, "user:profile.json", "ada's", user="ada")

    assert await load(service, "user:profile.json", user="bob") is None
    assert await keys(service, user="bob") == []


async def test_files_of_different_apps_are_separate(service: ArtifactService) -> None:
    await save(service, "user:profile.json", "in app")

    other = await service.list_artifact_keys(app_name="other-app", user_id="ada", session_id="s1")

    assert other == []


# -- deleting --------------------------------------------------------------------------------------------


async def test_deleting_a_file_removes_every_version_and_versions_restart_at_zero(
    service: ArtifactService,
) -> None:
    await save(service, "report.txt", "first")
    await save(service, "report.txt", "second")

    await service.delete_artifact(app_name=APP, user_id="ada", session_id="s1", filename="report.txt")

    assert await load(service, "report.txt") is None
    assert await keys(service) == []
    assert await save(service, "report.txt", "fresh") == 0


async def test_deleting_a_user_file_from_any_session_removes_it_for_all(service: ArtifactService) -> None:
    await save(service, "user:profile.json", "{}", session="s1")

    await service.delete_artifact(app_name=APP, user_id="ada", session_id="s2", filename="user:profile.json")

    assert await keys(service, session="s1") == []


async def test_deleting_a_missing_file_does_nothing(service: ArtifactService) -> None:
    await save(service, "keep.txt", "x")

    await service.delete_artifact(app_name=APP, user_id="ada", session_id="s1", filename="missing.txt")

    assert await keys(service) == ["keep.txt"]


# -- filenames -------------------------------------------------------------------------------------------


BAD_FILENAMES = ["", "user:", "..", "../secret", "reports/../../etc/passwd", "user:../other", "a\\..\\b"]


@pytest.mark.parametrize("filename", BAD_FILENAMES)
async def test_an_empty_or_traversing_filename_is_rejected_by_every_method(
    service: ArtifactService, filename: str
) -> None:
    with pytest.raises(ValueError, match="Artifact filename"):
        await service.save_artifact(app_name=APP, user_id="ada", session_id="s1", filename=filename, artifact="x")
    with pytest.raises(ValueError, match="Artifact filename"):
        await service.load_artifact(app_name=APP, user_id="ada", session_id="s1", filename=filename)
    with pytest.raises(ValueError, match="Artifact filename"):
        await service.list_versions(app_name=APP, user_id="ada", session_id="s1", filename=filename)
    with pytest.raises(ValueError, match="Artifact filename"):
        await service.delete_artifact(app_name=APP, user_id="ada", session_id="s1", filename=filename)
    assert await keys(service) == []


@pytest.mark.parametrize("filename", ["reports/q3.pdf", "v1..2.txt", "...", "user:notes/today.md"])
async def test_names_with_folders_or_dots_that_do_not_traverse_are_accepted(
    service: ArtifactService, filename: str
) -> None:
    assert await save(service, filename, "x") == 0
    assert await load(service, filename) == "x"
