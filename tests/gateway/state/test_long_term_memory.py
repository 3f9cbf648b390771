"""`SqliteMemoryService`: long-term memory searched by SQLite full-text search, per app and user."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from gateway.state import SqliteMemoryService, SqliteStateStore, StateScope
from gateway.tools import MemoryEntry

pytestmark = pytest.mark.anyio


def _texts(response: object) -> list[str]:
    memories = getattr(response, "memories")  # noqa: B009 - the response's one field, read alike for both tests
    return [part.text or "" for memory in memories for part in memory.content.parts]


async def test_memories_are_found_by_their_words_best_match_first_and_survive_a_new_service(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    first = SqliteMemoryService(path)
    facts = ["My favourite colour is teal.", "I live in Lisbon.", "My favourite food is bacalhau, in Lisbon."]
    await first.add_memory(app_name="app", user_id="ann", memories=[MemoryEntry(content=fact) for fact in facts])
    await first.aclose()
    again = SqliteMemoryService(path)
    try:
        assert _texts(await again.search_memory(app_name="app", user_id="ann", query="favourite colour")) == [
            "My favourite colour is teal.",
            "My favourite food is bacalhau, in Lisbon.",
        ]
        assert _texts(await again.search_memory(app_name="app", user_id="ann", query="LISBON food?")) == [
            "My favourite food is bacalhau, in Lisbon.",
            "I live in Lisbon.",
        ]
        assert _texts(await again.search_memory(app_name="app", user_id="ann", query="  ?! ")) == []
        assert _texts(await again.search_memory(app_name="app", user_id="ann", query='"teal" OR NEAR(')) == [
            "My favourite colour is teal."
        ]
    finally:
        await again.aclose()


async def test_a_users_memories_are_seen_by_no_other_user_or_app() -> None:
    service = SqliteMemoryService(":memory:")
    await service.add_memory(app_name="app", user_id="ann", memories=[MemoryEntry(content="Ann likes teal.")])
    await service.add_memory(app_name="other", user_id="ann", memories=[MemoryEntry(content="Ann likes red.")])
    await service.add_memory(app_name="app", user_id="bob", memories=[MemoryEntry(content="Bob likes grey.")])
    assert _texts(await service.search_memory(app_name="app", user_id="ann", query="likes")) == ["Ann likes teal."]
    assert _texts(await service.search_memory(app_name="app", user_id="bob", query="teal")) == []
    await service.aclose()


async def test_an_entry_added_again_under_its_id_replaces_the_old_one_and_delete_forgets_it() -> None:
    service = SqliteMemoryService(":memory:")
    await service.add_memory(app_name="a", user_id="u", memories=[MemoryEntry(id="m1", content="old colour teal")])
    await service.add_memory(app_name="a", user_id="u", memories=[MemoryEntry(id="m1", content="new colour red")])
    found = await service.search_memory(app_name="a", user_id="u", query="colour")
    assert [(m.id, _texts(type(found)(memories=[m]))) for m in found.memories] == [("m1", ["new colour red"])]
    assert found.memories[0].timestamp  # when it was remembered, as ADK's entries say (ISO 8601)
    await service.delete_memory(app_name="a", user_id="u", memory_id="m1")
    assert _texts(await service.search_memory(app_name="a", user_id="u", query="colour")) == []
    await service.aclose()


async def test_memory_lives_in_the_state_file_beside_the_state(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = SqliteStateStore(path)
    await store.apply(StateScope("app", "ann", "s1"), {"count": 1})
    service = SqliteMemoryService(path)
    await service.add_memory(app_name="app", user_id="ann", memories=[MemoryEntry(content="Ann likes teal.")])
    assert await store.load(StateScope("app", "ann", "s1")) == {"count": 1}
    await store.aclose()
    await service.aclose()
    with sqlite3.connect(path) as connection:
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"state", "memory_entries"} <= tables
