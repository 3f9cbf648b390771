"""The dependency direction of the packages: adapters/ stays pure; server/ knows nothing of client/ or hub/."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support.paths import ROOT

FORBIDDEN_IN_ADAPTERS = (
    "gateway",
    "anyio",
    "asyncio",
    "starlette",
    "uvicorn",
    "httpx",
    "httpx2",
    "mcp.client",
    "mcp.server",
    "mcp.shared",
)
FORBIDDEN_IN_SERVER = ("gateway.client", "gateway.hub")
SERVER_WINGS = ("auth", "http", "observe", "policy", "resources", "search", "sign_in", "tasks")
"""The server's wings, each a package of its own concern beside the core of serving local tools."""
MAX_MODULES_PER_FOLDER = 20
FORBIDDEN_IN_OAUTH = ("gateway.client", "gateway.hub", "gateway.server")


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module)
            # `from mcp import client` imports the submodule too.
            modules.update(f"{node.module}.{alias.name}" for alias in node.names)
    return modules


def _violations(package: str, forbidden: tuple[str, ...]) -> list[str]:
    found: list[str] = []
    root = ROOT / package
    for path in sorted(root.rglob("*.py")):
        shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        for module in sorted(_imported_modules(path)):
            if any(module == banned or module.startswith(banned + ".") for banned in forbidden):
                found.append(f"{shown} imports {module}")
    return found


def test_adapters_import_nothing_that_does_io_or_runs() -> None:
    assert _violations("adapters", FORBIDDEN_IN_ADAPTERS) == []


def test_the_server_imports_neither_the_client_nor_the_hub() -> None:
    # The hub plugs into the server through `gateway.server.extension`; the server never reaches back.
    assert _violations("gateway/server", FORBIDDEN_IN_SERVER) == []


@pytest.mark.parametrize("wing", SERVER_WINGS)
def test_no_wing_of_the_server_imports_the_client_or_the_hub(wing: str) -> None:
    # Each wing is part of the server room: it may use the server's core, never the rooms that consume servers.
    assert (ROOT / "gateway" / "server" / wing / "__init__.py").is_file()
    assert _violations(f"gateway/server/{wing}", FORBIDDEN_IN_SERVER) == []


def test_the_server_is_a_hall_of_rooms_each_a_documented_package_of_at_most_twenty_modules() -> None:
    server = ROOT / "gateway" / "server"
    folders = [server, *sorted(path for path in server.iterdir() if path.is_dir() and path.name != "__pycache__")]
    assert sorted(folder.name for folder in folders[1:]) == sorted(SERVER_WINGS)
    for folder in folders:
        package = folder / "__init__.py"
        assert ast.get_docstring(ast.parse(package.read_text(encoding="utf-8"))), f"{package} says what lives there"
        assert len(list(folder.glob("*.py"))) <= MAX_MODULES_PER_FOLDER, f"{folder} is a hall, not a room"


def test_the_shared_oauth_package_imports_neither_the_client_the_hub_nor_the_server() -> None:
    # Both sides use `gateway.oauth`; were it to import either, the server would reach the client through it.
    assert _violations("gateway/oauth", FORBIDDEN_IN_OAUTH) == []


def test_the_server_layering_check_catches_an_import_of_the_client_or_the_hub(tmp_path: Path) -> None:
    package = tmp_path / "server"
    package.mkdir()
    (package / "bad.py").write_text(
        "from gateway.client import McpToolset\nimport gateway.hub.relay\nfrom gateway import hub\n", encoding="utf-8"
    )
    found = _violations(str(package), FORBIDDEN_IN_SERVER)
    flagged = {line.rpartition(" imports ")[2] for line in found}
    assert flagged == {"gateway.client", "gateway.client.McpToolset", "gateway.hub", "gateway.hub.relay"}


def test_the_layering_check_catches_a_forbidden_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import anyio\nfrom mcp import client\nfrom mcp.types import Tool\n", encoding="utf-8")
    assert _imported_modules(sample) >= {"anyio", "mcp.client", "mcp.types"}


@pytest.mark.parametrize("package", ["adapters", "gateway"])
def test_nothing_imports_the_examples_or_tests(package: str) -> None:
    assert _violations(package, ("examples", "tests")) == []


def test_only_the_adk_bridge_imports_google_adk() -> None:
    # google-adk is the optional `adk` extra: everything outside gateway/adk must work without it.
    adk_packages = ("google.adk", "google.genai")
    found = _violations("gateway", adk_packages) + _violations("adapters", adk_packages)
    assert [line for line in found if not line.startswith(str(Path("gateway", "adk")) + "/")] == []
    assert found, "the bridge itself imports google-adk, so the check sees something"


def test_no_folder_of_the_house_is_a_hall_and_each_says_what_lives_there() -> None:
    for package in sorted((ROOT / "gateway").rglob("__init__.py")):
        folder = package.parent
        assert ast.get_docstring(ast.parse(package.read_text(encoding="utf-8"))), f"{package} says what lives there"
        assert len(list(folder.glob("*.py"))) <= MAX_MODULES_PER_FOLDER, f"{folder} is a hall, not a room"


def test_the_shared_tool_index_imports_neither_side() -> None:
    # Both the server's `search_tools` and a client's `tool_search=True` rank with it.
    assert _violations("gateway/search", FORBIDDEN_IN_OAUTH) == []


def test_upstream_sessions_know_nothing_of_the_hub() -> None:
    assert _violations("gateway/client", ("gateway.hub",)) == []
