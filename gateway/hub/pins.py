"""Pinned tool definitions (`pinTools`): an upstream tool is served only as it was approved.

The first listing of an upstream with `pinTools` is recorded whole: each tool's definition — name, title,
description, input and output schema, annotations — with a SHA-256 of it, in the state store (so every replica
sharing a store shares the pins). From then on a tool is served only if the upstream lists it exactly as approved:

* a tool whose definition hashes differently is a drift (a changed description, a widened schema...);
* a tool the upstream did not list when its tools were pinned (a new one, or a renamed one: the name is part of
  the definition) is new, and awaits approval.

Either is left out of `tools/list`, a call of it gets an `isError` result saying how to approve it, `/healthz`
reports it (`drifted`, `unapproved`) and a warning naming it is logged (once per definition).
`adk-mcp-gateway pins CONFIG` shows each as a unified diff of the approved and the current definition;
`adk-mcp-gateway pins approve CONFIG [TOOL]` records the current definition as approved. A call of a tool of an
upstream never listed yet is served as on first sight (the listing that pins the upstream comes first for every
MCP client).

The pins of a gateway live under their own app name in the store (`adk-mcp-gateway.pins/<gateway name>`), as
`app:` keys `<upstream key>/<tool name>`, plus `<upstream key>` marking an upstream whose tools were pinned (its
first listing may have been empty), so no tool ever sees them in its state. Writes are compare-and-set: two
processes that see an upstream first at once record it once.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import logging
import time
from collections.abc import Iterable, Sequence
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
    """An upstream tool withheld by its pins: its definition differs from the approved one, or none was approved."""

    upstream: str
    """The upstream's config key."""
    published: str
    """The tool's name as the gateway publishes it (prefixed)."""
    approved: dict[str, Any] | None
    """The approved definition; None for a tool the upstream did not list when its tools were pinned."""
    current: dict[str, Any]

    @property
    def new(self) -> bool:
        """Whether no definition of this tool was ever approved (a new or renamed tool)."""
        return self.approved is None

    def diff(self) -> str:
        """The change as a unified diff of the two definitions' JSON (all added for a new tool)."""
        return "".join(
            difflib.unified_diff(
                [] if self.approved is None else _lines(self.approved),
                _lines(self.current),
                fromfile=f"approved {self.published}" if self.approved is not None else "approved (none: new tool)",
                tofile=f"current {self.published}",
            )
        )

    def reason(self) -> str:
        """Why the tool is withheld, as a sentence's middle."""
        if self.approved is None:
            return (
                f"upstream {self.upstream!r} did not list it when its tools were pinned (pinTools), so it awaits "
                "approval"
            )
        return f"upstream {self.upstream!r} changed its definition since it was approved (pinTools)"

    def refusal(self, config_hint: str) -> str:
        """What a call of the withheld tool answers."""
        return (
            f"Tool {self.published!r} is withheld: {self.reason()}. Review it with `adk-mcp-gateway pins "
            f"{config_hint}` and approve it with `adk-mcp-gateway pins approve {config_hint} {self.published}`."
        )


class PinStore:
    """The approved tool definitions of one gateway, kept in a `StateStore`."""

    def __init__(self, store: StateStore, gateway_name: str) -> None:
        self.store = store
        self._scope = StateScope(app_name=_APP_PREFIX + gateway_name, user_id="pins", session_id="pins")

    @staticmethod
    def _key(upstream: str, tool: str) -> str:
        return f"app:{upstream}/{tool}"

    @staticmethod
    def _mark(upstream: str) -> str:
        return f"app:{upstream}"

    @staticmethod
    def _record(definition: dict[str, Any], now: float) -> dict[str, Any]:
        return {"sha256": definition_hash(definition), "definition": definition, "approved_at": now}

    async def approved(self, upstream: str, tool: str) -> dict[str, Any] | None:
        """The approved record of a tool (`sha256`, `definition`, `approved_at`), or None if never seen."""
        record = (await self.store.load(self._scope)).get(self._key(upstream, tool))
        return cast("dict[str, Any]", record) if isinstance(record, dict) else None

    async def records(self, upstream: str) -> tuple[bool, dict[str, dict[str, Any]]]:
        """Whether the upstream's tools were pinned, and the approved record of each of its tools, by tool name.

        An upstream counts as pinned once its first listing was recorded or any of its tools approved.
        """
        state = await self.store.load(self._scope)
        prefix = self._key(upstream, "")
        found = {
            key[len(prefix) :]: cast("dict[str, Any]", value)
            for key, value in state.items()
            if key.startswith(prefix) and isinstance(value, dict)
        }
        return self._mark(upstream) in state or bool(found), found

    async def pin_first_listing(self, upstream: str, definitions: Iterable[dict[str, Any]]) -> bool:
        """Record every definition as approved and the upstream as pinned, if none of it is recorded yet.

        Returns False when another process recorded some of it meanwhile (nothing written).
        """
        now = time.time()
        delta: dict[str, Any] = {self._mark(upstream): {"pinned_at": now}}
        for definition in definitions:
            delta[self._key(upstream, str(definition.get("name", "")))] = self._record(definition, now)
        try:
            await self.store.apply(self._scope, delta, expected=dict.fromkeys(delta, ABSENT))
        except StateConflictError:
            return False
        return True

    async def approve(self, upstream: str, definition: dict[str, Any], *, replacing: dict[str, Any] | None) -> bool:
        """Record `definition` as approved if the approved record is still `replacing` (None: none yet).

        The upstream counts as pinned from then on. Returns False when another process changed the record
        meanwhile (nothing written).
        """
        key = self._key(upstream, str(definition.get("name", "")))
        now = time.time()
        delta = {key: self._record(definition, now), self._mark(upstream): {"pinned_at": now}}
        try:
            await self.store.apply(self._scope, delta, expected={key: ABSENT if replacing is None else replacing})
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
        self._warned: dict[str, str] = {}
        """The digest last warned of, by tool name; only tools of the latest listing, so a hostile upstream
        publishing a new definition at every listing cannot grow it."""
        self._pinned = False
        """Whether the upstream's tools are known to be pinned (its first listing recorded)."""

    @property
    def drifts(self) -> list[Drift]:
        """The tools withheld as of the latest listing (changed or new), by tool name."""
        return [self._drifts[name] for name in sorted(self._drifts)]

    def published(self, tool: str) -> str:
        """A tool's name as the gateway publishes it."""
        return f"{self.prefix}_{tool}" if self.prefix else tool

    async def screen(self, tools: Sequence[types.Tool]) -> dict[str, Drift]:
        """The listed tools to withhold, by upstream tool name; the upstream's first listing is recorded whole."""
        definitions = {tool.name: pinned_definition(tool) for tool in tools}
        digests = {name: definition_hash(definition) for name, definition in definitions.items()}
        if self._pinned and all(self._approved_hashes.get(name) == digest for name, digest in digests.items()):
            self._drifts = {}
            self._warned = {}
            return {}
        records: dict[str, dict[str, Any]] = {}
        for _ in range(_RECORD_ATTEMPTS):
            self._pinned, records = await self.store.records(self.upstream)
            if self._pinned:
                break
            if await self.store.pin_first_listing(self.upstream, definitions.values()):
                logger.info("Pinned the definitions of the %d tools of upstream %r.", len(definitions), self.upstream)
                self._pinned = True
                self._approved_hashes.update(digests)
                self._drifts = {}
                return {}
        # Past the attempts without a record of its own, every tool not recorded by another process is new.
        drifts: dict[str, Drift] = {}
        for name, definition in definitions.items():
            drift = self._judge(definition, digests[name], records.get(name))
            if drift is not None:
                drifts[name] = drift
        self._drifts = drifts
        self._warned = {name: digest for name, digest in self._warned.items() if name in drifts}
        return drifts

    async def check(self, tool: types.Tool) -> Drift | None:
        """None if `tool` may be served as listed, else why not (for a call; `screen` judges whole listings).

        A tool of an upstream never pinned yet is served as on first sight; the upstream's listing pins it.
        """
        definition = pinned_definition(tool)
        digest = definition_hash(definition)
        if self._approved_hashes.get(tool.name) == digest:
            return None
        pinned, records = await self.store.records(self.upstream)
        if not pinned:
            return None
        drift = self._judge(definition, digest, records.get(tool.name))
        if drift is None:
            self._drifts.pop(tool.name, None)
        else:
            self._drifts[tool.name] = drift
        return drift

    def _judge(self, definition: dict[str, Any], digest: str, record: dict[str, Any] | None) -> Drift | None:
        """None if `definition` is the approved one (remembered as such), else its drift (warned of once)."""
        name = str(definition.get("name", ""))
        if record is not None and record.get("sha256") == digest:
            self._approved_hashes[name] = digest
            return None
        approved = None if record is None else cast("dict[str, Any]", record.get("definition") or {})
        drift = Drift(self.upstream, self.published(name), approved, definition)
        if self._warned.get(name) != digest:
            self._warned[name] = digest
            logger.warning(
                "Withholding tool %r: %s. Review: adk-mcp-gateway pins %s; approve: adk-mcp-gateway pins approve %s %s",
                drift.published,
                drift.reason(),
                self.config_hint,
                self.config_hint,
                drift.published,
            )
        return drift
