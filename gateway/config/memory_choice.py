"""The config's `memory` key: which long-term memory a server gives its tools.

    "memory": "memory.db"                         a SQLite file (full-text search; `gateway.state.SqliteMemoryService`)
    "memory": "my_app.memory:service"             a memory service object: ours, or google-adk's `BaseMemoryService`
    "memory": "services.py:memory_service"        (e.g. `InMemoryMemoryService()`, Vertex AI's) by reference

Without the key a server keeps memory in its SQLite state file; beside a Redis state store it has none until one
is named here. Relative paths are relative to the config file.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

from gateway.adk.acceptance import as_memory_service
from gateway.config.references import load_object
from gateway.errors import ConfigError
from gateway.state import SqliteMemoryService
from gateway.tools import MemoryService

__all__ = ["memory_service_from_config"]

_REFERENCE: Final = re.compile(r"^(?P<module>[\w.]+|.+\.py):(?P<attr>[A-Za-z_]\w*)$")


def memory_service_from_config(memory: str, base: Path) -> MemoryService:
    """The memory service the `memory` key names (see the module docstring).

    Raises:
        ConfigError: a reference that cannot be loaded, or names something that is no memory service.
    """
    match = _REFERENCE.match(memory)
    if match is None:
        path = Path(memory).expanduser()
        return SqliteMemoryService(path if memory == ":memory:" or path.is_absolute() else base / path)
    module = match["module"]
    if module.endswith(".py") and not Path(module).expanduser().is_absolute():
        module = str(base / module)
    value = load_object(f"{module}:{match['attr']}")
    try:
        return as_memory_service(value)
    except TypeError as exc:
        raise ConfigError(
            f'"memory": {memory!r} is a {type(value).__name__}, not a memory service. Name an object with '
            "search_memory and add_memory (gateway.tools.MemoryService, or google-adk's BaseMemoryService such as "
            "InMemoryMemoryService()), or give a SQLite file path."
        ) from exc
