"""Long-term memory, shaped like ADK's: `MemoryEntry`, `SearchMemoryResponse` and the `MemoryService` seam.

A tool remembers with `tool_context.add_memory(memories=[...])` and recalls with
`tool_context.search_memory(query)`, which answers a `SearchMemoryResponse` whose `memories` are `MemoryEntry`s, as
in ADK. Memory belongs to a user of an app: every session of that user finds it, no other user does. An entry's
`content` has the JSON shape of a genai `Content` (`role`, `parts` with `text`), so code written for ADK reads it
unchanged (`memory.content.parts[0].text`); a plain string, a genai `Content` and google-adk's own `MemoryEntry`
are accepted too.

`gateway.state.SqliteMemoryService` is the default service (full-text search in the state's SQLite file);
`gateway.adk` adapts google-adk's memory services to this seam and back (`gateway.adk.acceptance.as_memory_service`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, Final, Protocol, cast, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gateway.errors import ServiceNotConfiguredError

__all__ = [
    "NO_MEMORY_SERVICE",
    "NO_SESSION_CONVERSATION",
    "MemoryContent",
    "MemoryEntry",
    "MemoryPart",
    "MemoryService",
    "ScopedMemoryService",
    "SearchMemoryResponse",
    "memory_entry",
]

NO_MEMORY_SERVICE: Final = (
    "Memory service is not available: this ToolContext has no memory_service. A server of adk-mcp-gateway keeps "
    'memory in its SQLite state file; with a Redis state store, name one with the config file\'s "memory" key (a '
    "SQLite file, or module:attr of a memory service such as google-adk's InMemoryMemoryService). Elsewhere pass "
    "memory_service= to the ToolContext (gateway.state.SqliteMemoryService(path), or a google-adk Runner's "
    "memory_service= when the tool is lent with to_adk)."
)
"""What `search_memory`, `add_memory` and `add_session_to_memory` raise without a service (ADK's words first)."""

NO_SESSION_CONVERSATION: Final = (
    "An MCP session holds no conversation to add to memory (the MCP client keeps it): call "
    "tool_context.add_memory(memories=[...]) with what to remember."
)


class MemoryPart(BaseModel):
    """One part of a memory's content: its `text`; other genai part fields (inline data, ...) are kept as given."""

    model_config = ConfigDict(extra="allow")

    text: str | None = None


class MemoryContent(BaseModel):
    """A memory's content, in the JSON shape of a genai `Content`."""

    model_config = ConfigDict(extra="allow")

    role: str | None = None
    parts: list[MemoryPart] = Field(default_factory=list[MemoryPart])

    def text(self) -> str:
        """The text of every part, one line each."""
        return "\n".join(part.text for part in self.parts if part.text)


class MemoryEntry(BaseModel):
    """One memory (ADK's `MemoryEntry`): its content, metadata, id, author and when it happened (ISO 8601).

    `content` may also be given as a string (one user text part) or a genai `Content`.
    """

    content: MemoryContent
    custom_metadata: dict[str, Any] = Field(default_factory=dict[str, Any])
    id: str | None = None
    author: str | None = None
    timestamp: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _plain_content(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        fields = dict(cast("dict[str, Any]", value))
        content = fields.get("content")
        if isinstance(content, str):
            fields["content"] = {"role": "user", "parts": [{"text": content}]}
        elif isinstance(content, BaseModel) and not isinstance(content, MemoryContent):
            fields["content"] = content.model_dump(mode="json", exclude_none=True)
        return fields


class SearchMemoryResponse(BaseModel):
    """What a memory search answers (ADK's `SearchMemoryResponse`): the matching memories, best first."""

    memories: list[MemoryEntry] = Field(default_factory=list[MemoryEntry])


def memory_entry(value: object) -> MemoryEntry:
    """`value` as our `MemoryEntry`: one already, a string, a dict, or google-adk's `MemoryEntry` (converted).

    Raises:
        TypeError: `value` is none of these.
    """
    if isinstance(value, MemoryEntry):
        return value
    if isinstance(value, str):
        return MemoryEntry(content=MemoryContent(role="user", parts=[MemoryPart(text=value)]))
    if isinstance(value, BaseModel):
        return MemoryEntry.model_validate(value.model_dump(mode="json", exclude_none=True))
    if isinstance(value, dict):
        return MemoryEntry.model_validate(value)
    raise TypeError(f"A memory is a MemoryEntry or a str, got {type(value).__name__}: {value!r:.80}")


@runtime_checkable
class MemoryService(Protocol):
    """Where long-term memory lives, per app and user (the methods of ADK's `BaseMemoryService`, by keyword)."""

    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Remember `memories` for the user; an entry with the `id` of a remembered one replaces it."""
        ...

    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        """The user's memories that match `query`, best first."""
        ...

    async def delete_memory(self, *, app_name: str, user_id: str, memory_id: str | None = None) -> None:
        """Forget the user's memory with `memory_id` (its `MemoryEntry.id`); an unknown id does nothing."""
        ...

    async def add_session_to_memory(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Remember the conversation of `session_id`.

        Raises:
            ServiceNotConfiguredError: the service sees no conversation there (`NO_SESSION_CONVERSATION`).
        """
        ...


class ScopedMemoryService(ABC):
    """A `MemoryService` whose keyword methods (ADK's signatures) are here once: a subclass keeps the memories of
    each app and user (`_add`, `_search`, `_delete`). An MCP session holds no conversation, so
    `add_session_to_memory` refuses unless a subclass sees one."""

    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Remember `memories` for the user; an entry with the `id` of a remembered one replaces it."""
        await self._add(app_name, user_id, memories, custom_metadata)

    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        """The user's memories that match `query`, best first."""
        return await self._search(app_name, user_id, query)

    async def delete_memory(self, *, app_name: str, user_id: str, memory_id: str | None = None) -> None:
        """Forget the user's memory with `memory_id`; an unknown or missing id does nothing."""
        await self._delete(app_name, user_id, memory_id)

    async def add_session_to_memory(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """An MCP session holds no conversation (its client keeps it).

        Raises:
            ServiceNotConfiguredError: always, saying to call `add_memory` instead.
        """
        del app_name, user_id, session_id
        raise ServiceNotConfiguredError(NO_SESSION_CONVERSATION)

    # --- what a subclass keeps ----------------------------------------------------------------------------------

    @abstractmethod
    async def _add(
        self, app_name: str, user_id: str, memories: Sequence[MemoryEntry], metadata: Mapping[str, object] | None
    ) -> None:
        """Remember `memories` (`metadata`: what the caller adds to each entry's own)."""

    @abstractmethod
    async def _search(self, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        """The user's memories that match `query`, as this service ranks them."""

    @abstractmethod
    async def _delete(self, app_name: str, user_id: str, memory_id: str | None) -> None:
        """Forget the user's memory `memory_id`."""
