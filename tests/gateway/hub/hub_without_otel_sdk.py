"""`adk-mcp-gateway` with the OpenTelemetry SDK and exporters made unimportable, as without the `otel` extra.

The OpenTelemetry API stays (the MCP SDK depends on it); any import of `opentelemetry.sdk` or an exporter fails.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType

_BLOCKED = ("opentelemetry.sdk", "opentelemetry.exporter")


class _WithoutSdk(MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if any(fullname == blocked or fullname.startswith(f"{blocked}.") for blocked in _BLOCKED):
            raise ModuleNotFoundError(f"No module named {fullname!r} (the otel extra is not installed)", name=fullname)
        return None


sys.meta_path.insert(0, _WithoutSdk())

if __name__ == "__main__":
    from gateway.cli import main

    sys.exit(main(sys.argv[1:]))
