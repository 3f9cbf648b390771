"""`adk-mcp-gateway check`: validate a config, start each upstream, and report what works."""

from __future__ import annotations

from gateway.errors import GatewayError

__all__ = ["check"]


async def check(config_path: str, state: str | None = None) -> int:
    """Print one line per upstream (ok, FAIL, off) and per problem; returns 1 if anything fails, else 0.

    `state`: the state store holding the pins of upstreams with `pinTools` (a pending drift is a failure).
    """
    from gateway.cli._access import check_access
    from gateway.cli._pins import check_pins
    from gateway.client.sessions._stderr_relay import last_stderr_lines
    from gateway.config import load_config
    from gateway.hub import UpstreamToolset, gateway_tools
    from gateway.hub.name_check import local_tool_names

    config = load_config(config_path)
    # `listTimeout` keeps a slow upstream from holding up a listing while serving; check is there to say whether it
    # works, so it waits for it as long as connecting may take (an npx server's first start can take seconds).
    patient = {
        key: server.model_copy(update={"list_timeout": max(server.list_timeout, server.connect_timeout)})
        for key, server in config.mcp_servers.items()
    }
    items = gateway_tools(config.model_copy(update={"mcp_servers": patient}))
    enabled = config.enabled_servers()
    counts = f"{_count(len(enabled), 'upstream')}, {_count(len(config.tools), 'tool ref')}"
    print(f"config {config_path}: valid ({counts})")
    if config.ignored_keys:
        print(f"  note  ignored top-level keys (not the gateway's): {', '.join(config.ignored_keys)}")
    failures = 0
    published: list[tuple[str, str]] = []
    for item in items:
        if not isinstance(item, UpstreamToolset):
            continue
        try:
            async with item:
                # `list_mcp_tools` raises for an upstream that does not work; `get_tools` would leave it out.
                await item.list_mcp_tools()
                tools = await item.get_tools_with_prefix()
                session = await item.session()
                protocol = session.client.protocol_version
                print(f"  ok    {item.key}: {_count(len(tools), 'tool')}, protocol {protocol}")
                published.extend((tool.name, item.source_name) for tool in tools)
                failures += await check_pins(config, item, state)
        except GatewayError as exc:
            failures += 1
            print(f"  FAIL  {item.key}: {exc}")
            # What a stdio upstream wrote to stderr before failing usually says why; check logs it only at info.
            for line in last_stderr_lines(item.key):
                print(f"          | {line}")
    for key in config.mcp_servers:
        if key not in enabled:
            print(f'  off   {key}: disabled (not started; remove "disabled" to serve it)')
    local = await local_tool_names([item for item in items if not isinstance(item, UpstreamToolset)])
    print(f"  ok    local tools: {len(local)}")
    published.extend((name, "local") for name in local)
    if not enabled and not local:
        print("  WARN  nothing to serve: no enabled upstream in mcpServers and no local tools (tools).")
    failures += _report_name_conflicts(published)
    failures += await check_access(config, published)
    return 1 if failures else 0


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _report_name_conflicts(published: list[tuple[str, str]]) -> int:
    """Print one FAIL line per tool name that two sources publish; returns how many there are."""
    from gateway.hub.name_check import CONFLICT_FIX, name_conflicts

    conflicts = name_conflicts(published)
    for name, where in conflicts.items():
        print(
            f"  FAIL  names: {name!r} is published by {' and '.join(where)}, so serve refuses to start. " + CONFLICT_FIX
        )
    return len(conflicts)
