"""Long-term memory across the bridge: our `MemoryService` as google-adk's and back.

- `AdkMemoryService`: ours as a google-adk `BaseMemoryService`, for the ADK contexts of served google-adk tools and
  the Runner of a served agent, so that `load_memory`, `preload_memory` and `tool_context.search_memory` find what
  the server's memory holds.
- `MemoryFromAdk`: a google-adk memory service (`InMemoryMemoryService`, Vertex AI's, any `BaseMemoryService`) as
  ours, for a server given one (the config's `memory`).
- `RunnerMemory`: the memory of the google-adk Runner that called our tool (lent through `to_adk`), as ours.

A service without `add_memory` (google-adk's in-memory one has none) is given the entries as events instead, which
every google-adk service takes, so a tool's `add_memory` works whichever service holds the memory.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from google.adk.events import Event
from google.adk.memory import BaseMemoryService
from google.adk.memory.base_memory_service import SearchMemoryResponse as AdkSearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry as AdkMemoryEntry
from google.genai import types as genai_types
from typing_extensions import override

from gateway.errors import ServiceNotConfiguredError
from gateway.tools.memory_service import (
    NO_MEMORY_SERVICE,
    MemoryEntry,
    MemoryService,
    ScopedMemoryService,
    SearchMemoryResponse,
    memory_entry,
)

if TYPE_CHECKING:
    from google.adk.sessions import Session
    from google.adk.tools.tool_context import ToolContext as AdkToolContext

__all__ = ["AdkMemoryService", "MemoryFromAdk", "RunnerMemory", "adk_memory_service"]


def _entry_to_adk(entry: MemoryEntry) -> AdkMemoryEntry:
    return AdkMemoryEntry.model_validate(entry.model_dump(mode="json", exclude_none=True))


def _response_from_adk(response: AdkSearchMemoryResponse) -> SearchMemoryResponse:
    return SearchMemoryResponse(memories=[memory_entry(memory) for memory in response.memories])


def _response_to_adk(response: SearchMemoryResponse) -> AdkSearchMemoryResponse:
    return AdkSearchMemoryResponse(memories=[_entry_to_adk(memory) for memory in response.memories])


def _event_of(entry: MemoryEntry) -> Event:
    """An entry as the event google-adk's memory services remember (its author, content, id and time)."""
    content = genai_types.Content.model_validate(entry.content.model_dump(mode="json", exclude_none=True))
    event = Event(author=entry.author or "user", content=content, id=entry.id or Event.new_id())
    # A time that is not ISO 8601 is left out: the event keeps the time it was made.
    with contextlib.suppress(ValueError):
        if entry.timestamp:
            event.timestamp = datetime.fromisoformat(entry.timestamp).timestamp()
    return event


def _entry_of(event: Event) -> MemoryEntry | None:
    """An event with content as a memory entry (what google-adk's services make of a session's events)."""
    if event.content is None or not event.content.parts:
        return None
    return MemoryEntry.model_validate({
        "content": event.content.model_dump(mode="json", exclude_none=True),
        "id": event.id or None,
        "author": event.author or None,
        "timestamp": datetime.fromtimestamp(event.timestamp).astimezone().isoformat(),
    })  # fmt: skip


class AdkMemoryService(BaseMemoryService):
    """Our `MemoryService` as a google-adk `BaseMemoryService`.

    Args:
        memory: ours; None: every use raises our `NO_MEMORY_SERVICE` (a `ValueError`, as ADK raises, that also says
            how to configure a memory service).
        app_name: the app every memory belongs to, whatever app ADK names (a served agent's Runner is named after
            the agent; its memory is the server's, as its `app:` state is); None: the app ADK names.
    """

    def __init__(self, memory: MemoryService | None, *, app_name: str | None = None) -> None:
        self._memory = memory
        self._app_name = app_name

    @property
    def memory(self) -> MemoryService:
        """Ours.

        Raises:
            ServiceNotConfiguredError: there is none (`NO_MEMORY_SERVICE`).
        """
        if self._memory is None:
            raise ServiceNotConfiguredError(NO_MEMORY_SERVICE)
        return self._memory

    def _app(self, app_name: str) -> str:
        return self._app_name or app_name

    @override
    async def add_session_to_memory(self, session: Session) -> None:
        """Remember the session's events that have content (each under its event id, so adding again replaces)."""
        await self.add_events_to_memory(
            app_name=session.app_name, user_id=session.user_id, events=session.events, session_id=session.id
        )

    @override
    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Remember `events` that have content."""
        del session_id
        entries = [entry for entry in map(_entry_of, events) if entry is not None]
        if entries:
            await self.memory.add_memory(
                app_name=self._app(app_name), user_id=user_id, memories=entries, custom_metadata=custom_metadata
            )

    @override
    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[AdkMemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Remember `memories`."""
        await self.memory.add_memory(
            app_name=self._app(app_name),
            user_id=user_id,
            memories=[memory_entry(memory) for memory in memories],
            custom_metadata=custom_metadata,
        )

    @override
    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> AdkSearchMemoryResponse:
        """The user's memories that match `query`, best first."""
        found = await self.memory.search_memory(app_name=self._app(app_name), user_id=user_id, query=query)
        return _response_to_adk(found)

    @override
    async def delete_memory(self, *, app_name: str, user_id: str, memory_id: str | None = None) -> None:
        """Forget the user's memory `memory_id`."""
        await self.memory.delete_memory(app_name=self._app(app_name), user_id=user_id, memory_id=memory_id)


def adk_memory_service(memory: MemoryService | None, *, app_name: str | None = None) -> AdkMemoryService:
    """`memory` as google-adk's; with None, one whose every use raises our `NO_MEMORY_SERVICE` (a `ValueError`, as
    ADK raises, that also says how to configure a memory service)."""
    return AdkMemoryService(memory, app_name=app_name)


async def _add_to_adk(target: Any, entries: Sequence[MemoryEntry], **scope: Any) -> None:
    """Give `entries` to a google-adk service (or context): by its `add_memory`, or as events where it has none."""
    try:
        await target.add_memory(memories=[_entry_to_adk(entry) for entry in entries], **scope)
    except NotImplementedError:
        await target.add_events_to_memory(events=[_event_of(entry) for entry in entries], **scope)


class MemoryFromAdk(ScopedMemoryService):
    """A google-adk `BaseMemoryService` as our `MemoryService` (see the module docstring)."""

    def __init__(self, service: BaseMemoryService) -> None:
        self.service = service

    def __repr__(self) -> str:
        return f"MemoryFromAdk({self.service!r})"

    def _target(self, app_name: str, user_id: str) -> tuple[Any, dict[str, str]]:
        """What answers, and the app and user it is told (a service is told them; an ADK context knows its own)."""
        return self.service, {"app_name": app_name, "user_id": user_id}

    async def _add(
        self, app_name: str, user_id: str, memories: Sequence[MemoryEntry], metadata: Mapping[str, object] | None
    ) -> None:
        # As events when the service has no `add_memory`.
        target, scope = self._target(app_name, user_id)
        await _add_to_adk(target, memories, custom_metadata=metadata, **scope)

    async def _search(self, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        target, scope = self._target(app_name, user_id)
        return _response_from_adk(await target.search_memory(query=query, **scope))

    async def _delete(self, app_name: str, user_id: str, memory_id: str | None) -> None:
        target, scope = self._target(app_name, user_id)
        await target.delete_memory(memory_id=memory_id, **scope)


class RunnerMemory(MemoryFromAdk):
    """The memory service of the google-adk Runner running a call, reached through the call's ADK context.

    The app and user are the ADK session's; ADK raises its own `ValueError` when the Runner has no memory service.
    """

    def __init__(self, adk_context: AdkToolContext) -> None:
        self._adk_context = adk_context

    def __repr__(self) -> str:
        return f"RunnerMemory({self._adk_context!r})"

    def _target(self, app_name: str, user_id: str) -> tuple[Any, dict[str, str]]:
        del app_name, user_id
        return self._adk_context, {}

    async def add_session_to_memory(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Remember the ADK session's conversation."""
        del app_name, user_id, session_id
        await self._adk_context.add_session_to_memory()
