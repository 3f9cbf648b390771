"""Pinned tool definitions (`pinTools`): an upstream tool whose definition changed is withheld until approved.

On first sight of an upstream tool the gateway records its definition — name, title, description, input and
output schema, annotations — with a SHA-256 of it, in the state store (so every replica sharing a store shares
the pins). A later listing whose definition of that tool hashes differently is a drift: the tool is left out of
`tools/list`, a call of it gets an `isError` result saying how to approve it, and a warning naming it is logged
(once per new definition). `adk-mcp-gateway pins CONFIG` shows each drift as a unified diff of the approved and the
current definition; `adk-mcp-gateway pins approve CONFIG [TOOL]` records the current definition as approved.

The pins of a gateway live under their own app name in the store (`adk-mcp-gateway.pins/<gateway name>`), as
`app:` keys `<upstream key>/<tool name>`, so no tool ever sees them in its state. Writes are compare-and-set: two
processes that see a tool first at once record it once.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import logging
import time
from dataclasses import dataclass
from typing import Any, Final, cast

from mcp import types

from gateway.errors import StateConflictError
from gateway.state import StateScope, StateStore
from gateway.state.store import ABSENT

__all__ = ["PIN_FIELDS", "Drift", "PinStore", "ToolPins", "definition_hash", "pinned_definition"]

logger = logging.getLogger(__name__)

PIN_FIELDS: Final = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")
"""The parts of a tool's definition that are pinned (as the wire spells them)."""
_APP_PREFIX: Final = "adk-mcp-gateway.pins/"
_RECORD_ATTEMPTS: Final = 3


def pinned_definition(tool: types.Tool) -> dict[str, Any]:
    """The pinned parts of an upstream tool's definition, in wire form."""
    wire = tool.model_dump(by_alias=True, mode="json", exclude_none=True)
    return {key: wire[key] for key in PIN_FIELDS if key in wire}


def definition_hash(definition: dict[str, Any]) -> str:
    """The SHA-256 of a definition's canonical JSON (sorted keys, no spaces)."""
    canonical = json.dumps(definition, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _lines(definition: dict[str, Any]) -> list[str]:
    return json.dumps(definition, indent=2, sort_keys=True, ensure_ascii=False).splitlines(keepends=True)


@dataclass(frozen=True)
class Drift:
    """An upstream tool whose definition differs from the approved one."""

    upstream: str
    """The upstream's config key."""
    published: str
    """The tool's name as the gateway publishes it (prefixed)."""
    approved: dict[str, Any]
    current: dict[str, Any]

    def diff(self) -> str:
        """The change as a unified diff of the two definitions' JSON."""
        return "".join(
            difflib.unified_diff(
                _lines(self.approved),
                _lines(self.current),
                fromfile=f"approved {self.published}",
                tofile=f"current {self.published}",
            )
        )

    def refusal(self, config_hint: str) -> str:
        """What a call of the withheld tool answers."""
        return (
            f"Tool {self.published!r} is withheld: upstream {self.upstream!r} changed its definition since it was "
            f"approved (pinTools). Review the change with `adk-mcp-gateway pins {config_hint}` and accept it with "
            f"`adk-mcp-gateway pins approve {config_hint} {self.published}`."
        )


class PinStore:
    """The approved tool definitions of one gateway, kept in a `StateStore`."""

    def __init__(self, store: StateStore, gateway_name: str) -> None:
        self.store = store
        self._scope = StateScope(app_name=_APP_PREFIX + gateway_name, user_id="pins", session_id="pins")

    @staticmethod
    def _key(upstream: str, tool: str) -> str:
        return f"app:{upstream}/{tool}"

    async def approved(self, upstream: str, tool: str) -> dict[str, Any] | None:
        """The approved record of a tool (`sha256`, `definition`, `approved_at`), or None if never seen."""
        record = (await self.store.load(self._scope)).get(self._key(upstream, tool))
        return cast("dict[str, Any]", record) if isinstance(record, dict) else None

    async def approve(self, upstream: str, definition: dict[str, Any], *, replacing: dict[str, Any] | None) -> bool:
        """Record `definition` as approved if the approved record is still `replacing` (None: none yet).

        Returns False when another process changed the record meanwhile (nothing written).
        """
        key = self._key(upstream, str(definition.get("name", "")))
        record = {"sha256": definition_hash(definition), "definition": definition, "approved_at": time.time()}
        try:
            await self.store.apply(
                self._scope, {key: record}, expected={key: ABSENT if replacing is None else replacing}
            )
        except StateConflictError:
            return False
        return True


class ToolPins:
    """The pins of one upstream: which of its tools may be served as they are listed now.

    Args:
        store: where the approved definitions live.
        upstream: the upstream's config key.
        prefix: the prefix of its published tool names (None or "" for none).
        config_hint: how the operator names the config in commands (its path), for messages.
    """

    def __init__(self, store: PinStore, upstream: str, prefix: str | None, config_hint: str) -> None:
        self.store = store
        self.upstream = upstream
        self.prefix = prefix
        self.config_hint = config_hint
        self._approved_hashes: dict[str, str] = {}
        self._drifts: dict[str, Drift] = {}
        self._warned: set[tuple[str, str]] = set()

    @property
    def drifts(self) -> list[Drift]:
        """The drifts seen in the latest listings (by tool name)."""
        return [self._drifts[name] for name in sorted(self._drifts)]

    def published(self, tool: str) -> str:
        """A tool's name as the gateway publishes it."""
        return f"{self.prefix}_{tool}" if self.prefix else tool

    async def check(self, tool: types.Tool, *, record: bool = True) -> Drift | None:
        """None if `tool` may be served as listed (recording it on first sight), else its drift.

        `record=False` leaves a tool seen for the first time unrecorded (a read-only look, as `check` takes).
        """
        definition = pinned_definition(tool)
        digest = definition_hash(definition)
        if self._approved_hashes.get(tool.name) == digest:
            return None
        for _ in range(_RECORD_ATTEMPTS):
            approved = await self.store.approved(self.upstream, tool.name)
            if approved is None:
                if not record:
                    return None
                if await self.store.approve(self.upstream, definition, replacing=None):
                    logger.info("Pinned the definition of tool %r of upstream %r.", tool.name, self.upstream)
                    break
                continue  # another process recorded it first: compare with what it recorded
            if approved.get("sha256") == digest:
                break
            drift = Drift(self.upstream, self.published(tool.name), approved.get("definition") or {}, definition)
            self._drifts[tool.name] = drift
            if (tool.name, digest) not in self._warned:
                self._warned.add((tool.name, digest))
                logger.warning(
                    "Withholding tool %r of upstream %r: its definition changed since it was approved (pinTools). "
                    "Review: adk-mcp-gateway pins %s; accept: adk-mcp-gateway pins approve %s %s",
                    drift.published,
                    self.upstream,
                    self.config_hint,
                    self.config_hint,
                    drift.published,
                )
            return drift
        self._approved_hashes[tool.name] = digest
        self._drifts.pop(tool.name, None)
        return None
