"""The dependency direction of the packages: adapters/ stays pure."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
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
    for path in sorted((ROOT / package).rglob("*.py")):
        for module in sorted(_imported_modules(path)):
            if any(module == banned or module.startswith(banned + ".") for banned in forbidden):
                found.append(f"{path.relative_to(ROOT)} imports {module}")
    return found


def test_adapters_import_nothing_that_does_io_or_runs() -> None:
    assert _violations("adapters", FORBIDDEN_IN_ADAPTERS) == []


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
