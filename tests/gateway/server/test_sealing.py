"""The sealing key: read from the environment or the config, required where processes must share it."""

from __future__ import annotations

import os

import pytest
from server_harness import TOOLS_REF, run_serve

from gateway.errors import ConfigError
from gateway.server.sealing import require_shared_key, sealing_keys

KEY = "k" * 32
OTHER = "o" * 40


@pytest.fixture(autouse=True)
def no_key_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ADK_MCP_GATEWAY_SEALING_KEY", raising=False)


def test_without_a_key_each_process_makes_its_own() -> None:
    assert sealing_keys() is None


def test_the_variable_wins_over_the_config_and_holds_a_ring(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADK_MCP_GATEWAY_SEALING_KEY", f"{KEY}, {OTHER}")
    assert sealing_keys("c" * 32) == [KEY, OTHER]


def test_the_config_key_is_used_without_the_variable() -> None:
    assert sealing_keys(KEY) == [KEY]


def test_a_short_key_is_refused_without_showing_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADK_MCP_GATEWAY_SEALING_KEY", f"{KEY},short-secret")
    with pytest.raises(ConfigError, match="Sealing key 2 in \\$ADK_MCP_GATEWAY_SEALING_KEY is 12 bytes") as caught:
        sealing_keys()
    assert "short-secret" not in str(caught.value)


def test_redis_state_without_a_shared_key_is_refused() -> None:
    with pytest.raises(ConfigError, match="ADK_MCP_GATEWAY_SEALING_KEY"):
        require_shared_key(None, shared_state=True)


def test_one_process_on_sqlite_needs_no_key() -> None:
    require_shared_key(None, shared_state=False)
    require_shared_key([KEY], shared_state=True)


def test_serving_http_on_redis_without_a_sealing_key_exits_2_at_start_up() -> None:
    env = {k: v for k, v in os.environ.items() if k != "ADK_MCP_GATEWAY_SEALING_KEY"}
    done = run_serve(
        "--tools", TOOLS_REF, "--transport", "http", "--port", "0", "--state", "redis://127.0.0.1:1/0", env=env
    )
    assert done.returncode == 2
    assert "ADK_MCP_GATEWAY_SEALING_KEY" in done.stderr
    assert "Traceback" not in done.stderr


def test_serving_http_on_an_unreachable_redis_exits_2_naming_it() -> None:
    env = {**os.environ, "ADK_MCP_GATEWAY_SEALING_KEY": KEY}
    done = run_serve(
        "--tools",
        TOOLS_REF,
        "--transport",
        "http",
        "--port",
        "0",
        env={**env, "ADK_MCP_GATEWAY_STATE": "redis://127.0.0.1:1/0"},
    )
    assert done.returncode == 2
    assert "redis://127.0.0.1:1/0" in done.stderr
    assert "Traceback" not in done.stderr
