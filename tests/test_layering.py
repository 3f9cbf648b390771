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
SERVER_WINGS = ("auth", "caching", "http", "observe", "policy", "resources", "search", "sign_in", "tasks")
"""The server's wings, each a package of its own concern beside the core of serving local tools."""
MAX_MODULES_PER_FOLDER = 20
FORBIDDEN_IN_OAUTH = ("gateway.client", "gateway.hub", "gateway.server")
FORBIDDEN_IN_TOOLS = ("gateway.adk", "gateway.client", "gateway.hub", "gateway.server")


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


def _module_names(root: Path, package: str) -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for path in (root / package).rglob("*.py"):
        parts = list(path.relative_to(root).with_suffix("").parts)
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _circles(root: Path, package: str) -> list[list[str]]:
    """The import circles among the modules of `package`, lazy and type-checking imports included."""
    modules = _module_names(root, package)

    def home(name: str) -> str | None:
        # `from a.b import c` names module `a.b.c` when there is one, else `a.b` (nearest module that exists).
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        targets: set[str | None] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets.update(home(alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets.update(home(f"{node.module}.{alias.name}") for alias in node.names)
        graph[module] = {target for target in targets if target is not None and target != module}

    # Tarjan's strongly connected components, iteratively: a component of two or more modules is a circle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            node, edges = work[-1]
            following = next(edges, None)
            if following is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = stack[stack.index(node) :]
                    del stack[stack.index(node) :]
                    if len(component) > 1:
                        circles.append(sorted(component))
            elif following not in index:
                index[following] = low[following] = len(index)
                stack.append(following)
                work.append((following, iter(sorted(graph[following]))))
            elif following in stack:
                low[node] = min(low[node], index[following])
    return circles


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


def test_the_tool_model_imports_neither_the_adk_bridge_nor_either_side() -> None:
    # google-adk's objects are accepted one floor up (`gateway.adk.acceptance`): the bridge builds on the tool model.
    assert _violations("gateway/tools", FORBIDDEN_IN_TOOLS) == []


def test_no_modules_of_the_house_import_each_other_in_a_circle() -> None:
    assert _circles(ROOT, "gateway") == []
    assert _circles(ROOT, "adapters") == []


def test_the_circle_check_catches_a_circle_through_a_lazy_or_type_checking_import(tmp_path: Path) -> None:
    package = tmp_path / "house"
    (package / "wing").mkdir(parents=True)
    (package / "__init__.py").write_text('"""A house."""\n', encoding="utf-8")
    (package / "wing" / "__init__.py").write_text("from house.wing.b import B\n", encoding="utf-8")
    (package / "a.py").write_text("def f():\n    from house.wing import B\n", encoding="utf-8")
    (package / "wing" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from house import a\nB = 1\n", encoding="utf-8"
    )
    (package / "apart.py").write_text("import house.a\n", encoding="utf-8")
    assert _circles(tmp_path, "house") == [["house.a", "house.wing", "house.wing.b"]]
