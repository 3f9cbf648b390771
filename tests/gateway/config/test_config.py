"""The gateway config file: Claude Desktop's format and our additions, with errors that name the key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gateway.client import SseConnectionParams, StdioConnectionParams, StreamableHTTPConnectionParams
from gateway.config import load_config
from gateway.errors import ConfigError


def _write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "gateway.json"
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return path


def test_a_claude_desktop_config_loads_as_it_is(tmp_path: Path) -> None:
    claude = {
        "mcpServers": {
            "filesystem": {
                "command": "npx",
                "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"],
                "env": {"DEBUG": "1"},
            }
        }
    }
    config = load_config(_write(tmp_path, claude))
    server = config.mcp_servers["filesystem"]
    connection = server.connection(config.base)
    assert isinstance(connection, StdioConnectionParams)
    assert connection.command == "npx"
    assert connection.args[-1] == "/Users/me/Desktop"
    assert connection.env == {"DEBUG": "1"}
    assert server.prefix is None  # the gateway then uses the key, "filesystem"


def test_remote_servers_pick_their_transport(tmp_path: Path) -> None:
    config = load_config(
        _write(
            tmp_path,
            {
                "mcpServers": {
                    "a": {"url": "http://127.0.0.1:1/mcp"},
                    "b": {"url": "http://127.0.0.1:1/sse"},
                    "c": {"url": "http://127.0.0.1:1/events", "transport": "sse"},
                    "d": {"url": "http://127.0.0.1:1/x", "type": "http", "headers": {"X-Key": "k"}},
                }
            },
        )
    )
    kinds = {name: type(server.connection(config.base)) for name, server in config.mcp_servers.items()}
    assert kinds == {
        "a": StreamableHTTPConnectionParams,
        "b": SseConnectionParams,
        "c": SseConnectionParams,
        "d": StreamableHTTPConnectionParams,
    }


def test_environment_variables_are_interpolated_and_a_missing_one_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = {"mcpServers": {"r": {"url": "http://h/mcp", "headers": {"Authorization": "Bearer ${GW_TEST_TOKEN}"}}}}
    path = _write(tmp_path, data)
    monkeypatch.delenv("GW_TEST_TOKEN", raising=False)
    with pytest.raises(
        ConfigError, match=r"mcpServers\.r\.headers\.Authorization: the environment variable GW_TEST_TOKEN is not set"
    ):
        load_config(path)
    monkeypatch.setenv("GW_TEST_TOKEN", "s3cret")
    assert load_config(path).mcp_servers["r"].headers == {"Authorization": "Bearer s3cret"}


def test_a_double_dollar_keeps_a_literal_placeholder(tmp_path: Path) -> None:
    config = load_config(_write(tmp_path, {"mcpServers": {"s": {"command": "echo", "args": ["$${HOME}"]}}}))
    assert config.mcp_servers["s"].args == ["${HOME}"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"mcpServers": {"s": {"command": "x", "arg": []}}},
            r"mcpServers\.s\.arg: unknown key\. Did you mean 'args'\?",
        ),
        ({"mcpServer": {}}, r"mcpServer: unknown key\. Did you mean 'mcpServers'\?"),
        ({"mcpServers": {"s": {}}}, r"give either 'command' \(a stdio server\) or 'url'"),
        ({"mcpServers": {"s": {"command": "x", "url": "http://h"}}}, r"not both or neither"),
        (
            {"mcpServers": {"s": {"command": "x", "connectTimeout": -1}}},
            r"mcpServers\.s\.connectTimeout: Input should be greater than 0",
        ),
        ({"mcpServers": {"s": {"command": "x", "confirm": "always"}}}, r"mcpServers\.s\.confirm"),
        (
            {"mcpServers": {"s": {"command": "x", "protocolVersion": "2025-06-18"}}},
            r"mcpServers\.s\.protocolVersion: Input should be '2025-11-25' or '2026-07-28'",
        ),
        (
            {"mcpServers": {"s": {"url": "http://h", "type": "stdio"}}},
            r"'type' is 'stdio' but 'url' names a remote server",
        ),
        ([1, 2], r"must be a JSON object"),
    ],
)
def test_a_bad_config_is_a_config_error_naming_the_key(tmp_path: Path, data: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(_write(tmp_path, data))


def test_malformed_json_names_the_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"not valid JSON at line 2, column"):
        load_config(_write(tmp_path, '{"mcpServers": {\n  "a": }\n}'))


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"Cannot read the gateway config .*nope\.json"):
        load_config(tmp_path / "nope.json")


def test_gateway_options_have_safe_defaults(tmp_path: Path) -> None:
    config = load_config(_write(tmp_path, {"mcpServers": {"s": {"command": "x", "disabled": True}}, "tools": ["t.py"]}))
    server = config.mcp_servers["s"]
    assert (server.session_policy, server.confirm, server.allow_tools, server.deny_tools) == (
        "isolated",
        False,
        None,
        [],
    )
    assert config.enabled_servers() == {}
    assert config.tools == ["t.py"]


def test_a_real_claude_desktop_config_with_its_own_top_level_keys_loads_with_one_notice(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    claude = {
        "globalShortcut": "Ctrl+Space",
        "preferences": {"menuBarEnabled": False},
        "isUsingBuiltInNodeForMcp": True,
        "mcpServers": {"time": {"command": "mcp-server-time"}},
    }
    with caplog.at_level("INFO", logger="gateway.config"):
        config = load_config(_write(tmp_path, claude))
    assert list(config.mcp_servers) == ["time"]
    assert config.ignored_keys == ("globalShortcut", "isUsingBuiltInNodeForMcp", "preferences")
    notices = [record.getMessage() for record in caplog.records if record.name == "gateway.config"]
    assert len(notices) == 1
    assert "globalShortcut, isUsingBuiltInNodeForMcp, preferences" in notices[0]


@pytest.mark.parametrize(
    ("key", "suggestion"),
    [("mcpservers", "mcpServers"), ("mcp_server", "mcpServers"), ("tool", "tools"), ("nme", "name")],
)
def test_a_near_miss_of_a_top_level_key_stays_an_error_with_did_you_mean(
    tmp_path: Path, key: str, suggestion: str
) -> None:
    with pytest.raises(ConfigError, match=rf"{key}: unknown key\. Did you mean '{suggestion}'\?"):
        load_config(_write(tmp_path, {"globalShortcut": "x", key: {}}))


def test_an_unknown_key_inside_a_server_stays_an_error_even_beside_ignored_top_level_keys(tmp_path: Path) -> None:
    data = {"preferences": {}, "mcpServers": {"s": {"command": "x", "globalShortcut": "y"}}}
    with pytest.raises(ConfigError, match=r"mcpServers\.s\.globalShortcut: unknown key\."):
        load_config(_write(tmp_path, data))
