"""Where tool state lives between calls: the `StateStore` protocol and its in-memory and SQLite stores."""

from gateway.state.memory_store import InMemoryStateStore
from gateway.state.sqlite_store import SqliteStateStore
from gateway.state.store import StateScope, StateStore

__all__ = ["InMemoryStateStore", "SqliteStateStore", "StateScope", "StateStore"]
