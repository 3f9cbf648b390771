"""`State`: the delta-tracking state a tool sees as `tool_context.state`, shaped like ADK's.

Keys carry their scope as a prefix: `app:` (shared by the whole app), `user:` (one user, across sessions),
`temp:` (this invocation only, never persisted); a plain key belongs to the session. ADK has no delete: a tool
clears a key by assigning `None`.
"""

from __future__ import annotations

import copy
import datetime
import decimal
import enum
import fractions
import pickle
import uuid
from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, ClassVar, Final, Literal, TypeAlias, cast

__all__ = ["ABSENT", "Scope", "State", "scope_of"]


class _Absent(enum.Enum):
    ABSENT = "absent"

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Final = _Absent.ABSENT
"""In `State.reads()` (and a store's `expected`): the key was looked up and had no value."""

Scope: TypeAlias = Literal["session", "user", "app", "temp"]

# Values of these types cannot change in place, so reading them needs no snapshot.
_IMMUTABLE_SCALARS = (
    type(None),
    bool,
    int,
    float,
    complex,
    str,
    bytes,
    range,
    decimal.Decimal,
    fractions.Fraction,
    datetime.date,
    datetime.time,
    datetime.timedelta,
    datetime.tzinfo,
    uuid.UUID,
    enum.Enum,
)

# What `copy.deepcopy` raises for an object it cannot copy (locks, sockets, generators, odd __reduce__s).
_DEEPCOPY_ERRORS = (TypeError, copy.Error, pickle.PicklingError, RecursionError)


def scope_of(key: str) -> Scope:
    """The scope a state key belongs to, read from its prefix (a key without one is session state)."""
    if key.startswith(State.APP_PREFIX):
        return "app"
    if key.startswith(State.USER_PREFIX):
        return "user"
    if key.startswith(State.TEMP_PREFIX):
        return "temp"
    return "session"


class State(Mapping[str, Any]):
    """The state of every scope merged into one mapping, recording which keys a tool changed.

    `state[key] = value` writes to the value and records the key in the delta. Mutating a dict, list or other
    mutable object read from the state is detected too: the object is deep-copied the first time it is read,
    and `has_delta()`, `delta`, `persistent_delta()` and `to_dict()` record it in the delta if it no longer
    equals that copy. An object that cannot be deep-copied is recorded as changed as soon as it is read, and
    one whose equality is identity (a class without `__eq__`) always compares changed: both err on the side of
    persisting a value that did not change rather than losing one that did.

    Args:
        value: The current state of every scope, keys with their scope prefix.
        delta: Changes already recorded in this invocation; read before `value`.

    Both dicts are used as given, not copied: writes go through to them, as ADK's `State` writes through to
    the session's state and the event's state delta.
    """

    APP_PREFIX: ClassVar[str] = "app:"
    USER_PREFIX: ClassVar[str] = "user:"
    TEMP_PREFIX: ClassVar[str] = "temp:"

    __slots__ = ("_delta", "_reads", "_snapshots", "_value")

    def __init__(self, value: dict[str, Any] | None = None, delta: dict[str, Any] | None = None) -> None:
        self._value: dict[str, Any] = {} if value is None else value
        self._delta: dict[str, Any] = {} if delta is None else delta
        # key -> deep copy of the value as first read, for keys not (yet) in the delta.
        self._snapshots: dict[str, Any] = {}
        # key -> the value as first read from `value` (a snapshot if mutable), or ABSENT: what the call's
        # outcome depends on.
        self._reads: dict[str, Any] = {}

    def __getitem__(self, key: str) -> Any:
        if key in self._delta:
            # Already recorded: the delta holds this very object, so in-place changes land in it.
            return self._delta[key]
        if key not in self._value:
            self._reads.setdefault(key, ABSENT)
            raise KeyError(key)
        value = self._value[key]
        if key not in self._reads:
            self._reads[key] = self._first_read(key, value)
        return value

    def __setitem__(self, key: str, value: Any) -> None:
        self._value[key] = value
        self._delta[key] = value
        self._snapshots.pop(key, None)

    def __delitem__(self, key: str) -> None:
        raise TypeError(f"State does not support deleting {key!r}; assign None to clear it instead.")

    def __contains__(self, key: object) -> bool:
        if key in self._delta:
            return True
        if not isinstance(key, str):
            return False
        if key not in self._reads:
            self._reads[key] = self._first_read(key, self._value[key]) if key in self._value else ABSENT
        return key in self._value

    def __iter__(self) -> Iterator[str]:
        yield from self._value
        yield from (key for key in self._delta if key not in self._value)

    def __len__(self) -> int:
        return len(self._value) + sum(1 for key in self._delta if key not in self._value)

    def __repr__(self) -> str:
        return f"State(value={self._value!r}, delta={self._delta!r})"

    def setdefault(self, key: str, default: Any = None) -> Any:
        """Return `state[key]`, first setting it to `default` (and recording it) if it is missing."""
        if key in self:
            return self[key]
        self[key] = default
        return default

    def update(self, other: Mapping[str, Any] | Iterable[tuple[str, Any]] = (), /, **kwargs: Any) -> None:
        """Set every key of `other` and `kwargs`, as `dict.update` does; each one is recorded in the delta."""
        for key, value in dict(other, **kwargs).items():
            self[key] = value

    def to_dict(self) -> dict[str, Any]:
        """A shallow copy of the merged state: the value with the delta applied over it (every key counts as read)."""
        for key, value in self._value.items():
            if key not in self._reads and key not in self._delta:
                self._reads[key] = self._first_read(key, value)
        self._record_nested_changes()
        return {**self._value, **self._delta}

    def reads(self) -> dict[str, Any]:
        """The keys read from the value (not written first), each with the value as read or `ABSENT`.

        A store applies the delta only if these keys still hold these values, so a call that read stale state
        is run again rather than overwriting what another call wrote.
        """
        return dict(self._reads)

    def has_delta(self) -> bool:
        """Whether any key was set or any value read from the state was changed in place."""
        self._record_nested_changes()
        return bool(self._delta)

    @property
    def delta(self) -> dict[str, Any]:
        """A copy of the changes recorded so far, `temp:` keys included."""
        self._record_nested_changes()
        return dict(self._delta)

    def persistent_delta(self) -> dict[str, Any]:
        """The changes to persist: the delta without `temp:` keys, which end with the invocation."""
        self._record_nested_changes()
        return {key: value for key, value in self._delta.items() if scope_of(key) != "temp"}

    def readonly_view(self) -> MappingProxyType[str, Any]:
        """A read-only mapping of the merged state as it is now (what a `ReadonlyContext` exposes)."""
        return MappingProxyType(self.to_dict())

    def _first_read(self, key: str, value: Any) -> Any:
        """Snapshot a mutable value at its first read (to detect in-place changes); returns the value as read."""
        if _is_immutable(value):
            return value
        if key not in self._snapshots:
            try:
                self._snapshots[key] = copy.deepcopy(value)
            except _DEEPCOPY_ERRORS:
                self._delta[key] = value
                return value
        return self._snapshots[key]

    def _record_nested_changes(self) -> None:
        missing = object()
        for key, snapshot in list(self._snapshots.items()):
            current = self._value.get(key, missing)
            if current is missing:
                # The caller dropped the key from the value dict: there is nothing left to compare.
                del self._snapshots[key]
            elif _differs(current, snapshot):
                self._delta[key] = current
                del self._snapshots[key]


def _is_immutable(value: object) -> bool:
    if isinstance(value, _IMMUTABLE_SCALARS):
        return True
    if isinstance(value, tuple | frozenset):
        return all(_is_immutable(item) for item in cast("Iterable[object]", value))
    return False


def _differs(current: object, snapshot: object) -> bool:
    try:
        return bool(current != snapshot)
    except (TypeError, ValueError):
        # An __eq__ that raises or is ambiguous (numpy arrays): assume a change rather than lose one.
        return True
