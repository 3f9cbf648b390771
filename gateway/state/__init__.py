"""Where tool state lives between calls: the `StateStore` protocol and its in-memory and SQLite stores; also the
long-term memory kept beside it (`SqliteMemoryService`)."""

from gateway.state.credential_store import CredentialKeys, CredentialStore
from gateway.state.long_term_memory import SqliteMemoryService
from gateway.state.memory_store import InMemoryStateStore
from gateway.state.sqlite_store import SqliteStateStore
from gateway.state.store import StateScope, StateStore

__all__ = [
    "CredentialKeys",
    "CredentialStore",
    "InMemoryStateStore",
    "SqliteMemoryService",
    "SqliteStateStore",
    "StateScope",
    "StateStore",
]
