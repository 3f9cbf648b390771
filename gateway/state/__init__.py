"""Where tool state lives between calls: the `StateStore` protocol and its in-memory and SQLite stores."""

from gateway.state.credential_store import CredentialKeys, CredentialStore
from gateway.state.memory_store import InMemoryStateStore
from gateway.state.sqlite_store import SqliteStateStore
from gateway.state.store import StateScope, StateStore

__all__ = ["CredentialKeys", "CredentialStore", "InMemoryStateStore", "SqliteStateStore", "StateScope", "StateStore"]
