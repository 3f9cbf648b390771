"""`adk-mcp-gateway pins CONFIG` and `pins approve CONFIG [TOOL]`: review and accept withheld tool definitions.

`pins` connects to every upstream with `pinTools`, compares each tool's definition with the approved one in the
state store that `serve` uses (`--state`, the config's `state` or `$ADK_MCP_GATEWAY_STATE`) and prints each drift
(a changed definition) and each new tool (one the upstream did not list when its tools were pinned) as a unified
diff; it exits 1 when one is pending. `pins approve` records the current definition of TOOL (a published name,
e.g. `time_convert`), or of every withheld and not yet pinned tool, as approved; a running gateway serves it from
its next listing. `check` reports pending ones the same way (`check_pins`).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gateway.errors import GatewayError, UpstreamUnavailableError

if TYPE_CHECKING:
    # Imported where used: the CLI parses its arguments before loading the MCP stack.
    from gateway.config import GatewayConfig
    from gateway.hub.pins import Drift, PinStore
    from gateway.hub.upstreams import UpstreamToolset

__all__ = ["check_pins", "run_pins"]

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2


@dataclass
class _Survey:
    """What one pinned upstream lists now, compared with its pins."""

    toolset: UpstreamToolset
    drifts: list[Drift] = field(default_factory=list["Drift"])
    """The tools withheld: changed since approved, or new since the upstream's tools were pinned."""
    unpinned: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    """Definitions of the tools of an upstream never pinned yet (recorded by `serve`'s first listing)."""
    approved: dict[str, dict[str, Any] | None] = field(default_factory=dict[str, dict[str, Any] | None])
    """The approved record of every drifted tool, by upstream tool name."""
    pinned: int = 0


async def _survey(toolset: UpstreamToolset, pins: PinStore) -> _Survey:
    from gateway.client import McpToolset
    from gateway.hub.pins import Drift, pinned_definition

    survey = _Survey(toolset)
    pinned, records = await pins.records(toolset.key)
    # The tools the gateway would serve (filters applied), as the upstream lists them, pinned or not.
    for tool in await McpToolset.get_tools(toolset):
        raw = getattr(tool, "raw_mcp_tool", None)
        if raw is None:
            continue
        current = pinned_definition(raw)
        record = records.get(raw.name)
        published = f"{toolset.tool_name_prefix}_{raw.name}" if toolset.tool_name_prefix else raw.name
        if record is None and not pinned:
            survey.unpinned.append(current)
        elif record is None:
            survey.drifts.append(Drift(toolset.key, published, None, current))
        elif record.get("definition") != current:
            survey.drifts.append(Drift(toolset.key, published, record.get("definition") or {}, current))
            survey.approved[raw.name] = record
        else:
            survey.pinned += 1
    return survey


def _print_survey(survey: _Survey) -> None:
    key = survey.toolset.key
    new = sum(drift.new for drift in survey.drifts)
    print(
        f"upstream {key!r}: {survey.pinned} tools as approved, {len(survey.drifts) - new} changed, {new} new, "
        f"{len(survey.unpinned)} not pinned yet"
    )
    for drift in survey.drifts:
        sys.stdout.write(drift.diff())


async def check_pins(config: GatewayConfig, toolset: UpstreamToolset, state: str | None) -> int:
    """For `check`: print the withheld tools of one connected upstream with `pinTools`; returns how many."""
    from gateway.hub.pins import PinStore
    from gateway.state.location import open_state_store, state_location

    if not config.pins_tools(toolset.key):
        return 0
    store = open_state_store(state_location(state, config.state))
    try:
        survey = await _survey(toolset, PinStore(store, config.name))
    finally:
        await store.aclose()
    for drift in survey.drifts:
        if drift.new:
            print(
                f"  NEW   {toolset.key}: tool {drift.published!r} is not among the approved tools, so it is withheld "
                f"until approved: `adk-mcp-gateway pins approve {config.path} {drift.published}` (review it with "
                f"`adk-mcp-gateway pins {config.path}`)."
            )
        else:
            print(
                f"  DRIFT {toolset.key}: tool {drift.published!r} changed since it was approved, so it is withheld. "
                f"See the diff with `adk-mcp-gateway pins {config.path}`."
            )
    return len(survey.drifts)


async def run_pins(args: argparse.Namespace) -> int:
    """`pins CONFIG` or `pins approve CONFIG [TOOL]`."""
    from gateway.config import load_config
    from gateway.hub.pins import PinStore
    from gateway.hub.upstreams import upstream_toolset
    from gateway.state.location import open_state_store, state_location

    words: list[str] = list(args.words)
    approve = words[0] == "approve" and len(words) > 1
    if approve:
        words = words[1:]
    if len(words) > (2 if approve else 1):
        raise GatewayError("Usage: adk-mcp-gateway pins CONFIG | adk-mcp-gateway pins approve CONFIG [TOOL]")
    config = load_config(words[0])
    chosen = words[1] if approve and len(words) > 1 else None
    keys = [key for key in config.enabled_servers() if config.pins_tools(key)]
    if not keys:
        print(f"{config.path}: no upstream has pinTools; nothing is pinned.")
        return EXIT_OK
    store = open_state_store(state_location(args.state, config.state))
    pins = PinStore(store, config.name)
    surveys: list[_Survey] = []
    failures = 0
    try:
        for key in keys:
            try:
                async with upstream_toolset(config, key, pins) as toolset:
                    surveys.append(await _survey(toolset, pins))
            except UpstreamUnavailableError as exc:
                failures += 1
                print(f"upstream {key!r}: FAIL {exc}")
        if approve:
            return await _approve(config, surveys, pins, chosen) or (EXIT_FAILURE if failures else EXIT_OK)
    finally:
        await store.aclose()
    drifted = 0
    for survey in surveys:
        _print_survey(survey)
        drifted += len(survey.drifts)
    if drifted:
        print(
            f"{drifted} tool definition(s) changed or are new, and are withheld. Approve with "
            f"`adk-mcp-gateway pins approve {config.path} TOOL` (or without TOOL for all)."
        )
    return EXIT_FAILURE if drifted or failures else EXIT_OK


async def _approve(config: GatewayConfig, surveys: list[_Survey], pins: PinStore, chosen: str | None) -> int:
    """Approve the chosen tool (or every withheld and unpinned one); 0, or EXIT_USAGE for an unknown TOOL."""
    approved: list[str] = []
    for survey in surveys:
        toolset = survey.toolset
        prefix = toolset.tool_name_prefix
        for drift in survey.drifts:
            if chosen is None or drift.published == chosen:
                name = str(drift.current.get("name", ""))
                if await pins.approve(toolset.key, drift.current, replacing=survey.approved.get(name)):
                    approved.append(drift.published)
        for definition in survey.unpinned:
            published = f"{prefix}_{definition['name']}" if prefix else str(definition["name"])
            if (chosen is None or published == chosen) and await pins.approve(toolset.key, definition, replacing=None):
                approved.append(published)
    if chosen is not None and not approved:
        waiting = [d.published for s in surveys for d in s.drifts]
        print(
            f"adk-mcp-gateway: error: no withheld or unpinned tool {chosen!r} in {config.path}. Withheld: "
            f"{', '.join(waiting) or '(none)'}.",
            file=sys.stderr,
        )
        return EXIT_USAGE
    for name in approved:
        print(f"approved {name}")
    if not approved:
        print("nothing to approve: every pinned tool is as approved.")
    return EXIT_OK
