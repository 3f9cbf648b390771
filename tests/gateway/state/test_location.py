from __future__ import annotations

from pathlib import Path

import pytest

from gateway.state.location import is_redis, open_state_store, state_location
from gateway.state.redis_store import RedisStateStore
from gateway.state.sqlite_store import SqliteStateStore


@pytest.fixture(autouse=True)
def no_state_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("ADK_MCP_GATEWAY_STATE", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))


def test_the_flag_wins_over_the_variable_and_the_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADK_MCP_GATEWAY_STATE", "redis://from-env")
    assert state_location("redis://from-flag", "redis://from-config") == "redis://from-flag"


def test_the_variable_wins_over_the_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADK_MCP_GATEWAY_STATE", "redis://from-env")
    assert state_location(None, "redis://from-config") == "redis://from-env"


def test_the_config_wins_over_the_default() -> None:
    assert state_location(None, "redis://from-config") == "redis://from-config"


def test_without_any_the_state_is_the_default_sqlite_file(tmp_path: Path) -> None:
    assert state_location() == str(tmp_path / "xdg" / "adk-mcp-gateway" / "state.db")


@pytest.mark.parametrize(
    "url", ["redis://localhost:6379/0", "rediss://u:p@host/1", "REDIS://host", "unix:///run/r.sock"]
)
def test_redis_urls_open_a_redis_store(url: str) -> None:
    assert is_redis(url)
    assert isinstance(open_state_store(url), RedisStateStore)


@pytest.mark.parametrize("path", ["state.db", "/var/lib/gw/state.db", "~/state.db", "redis.db"])
def test_anything_else_is_a_sqlite_file(path: str) -> None:
    assert not is_redis(path)
    assert isinstance(open_state_store(path), SqliteStateStore)
