"""One home per idea: what both rooms need is built in one module below them, not once per room."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.paths import ROOT

HTTP_CLIENTS = Path("gateway/_http_clients.py")


def _builds_http_client(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return False
    owner = node.func.value
    return node.func.attr == "AsyncClient" and isinstance(owner, ast.Name) and owner.id == "httpx2"


def test_httpx2_clients_are_built_in_one_module_only() -> None:
    builders = sorted(
        str(path.relative_to(ROOT))
        for package in ("gateway", "adapters")
        for path in (ROOT / package).rglob("*.py")
        if any(_builds_http_client(node) for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))))
    )
    assert builders == [str(HTTP_CLIENTS)]
