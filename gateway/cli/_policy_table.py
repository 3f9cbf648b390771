"""The effective policy per principal, as `check` prints it: which of the published tools each may call, and limits.

The principals shown are the ones the rules name (a glob stands for whoever it matches; a rule's claims are
shown with it), plus `anyone` (a principal no named rule is for).
"""

from __future__ import annotations

from collections.abc import Sequence

from gateway.server.identity import Principal
from gateway.server.policy.rules import Policy

__all__ = ["policy_table", "representatives"]


def representatives(policy: Policy) -> list[tuple[str, Principal]]:
    """One principal per (principals glob, claims) the rules name, labelled; `anyone` last."""
    found: dict[str, Principal] = {}
    for rule in policy.rules:
        claims = {name: values[0] for name, values in rule.claims.items() if values}
        shown = ", ".join(f"{name}={value}" for name, value in claims.items())
        for pattern in rule.principals:
            who = "anyone" if pattern == "*" else pattern
            label = f"{who} with {shown}" if shown else who
            found.setdefault(label, Principal(pattern, claims))
    anyone = found.pop("anyone", Principal("*"))
    return [*found.items(), ("anyone", anyone)]


def policy_table(policy: Policy, tools: Sequence[str]) -> list[str]:
    """Lines of a two-column table: principal, and the tools it may call (with their rate limits)."""
    rows: list[tuple[str, str]] = [("PRINCIPAL", "TOOLS")]
    for label, principal in representatives(policy):
        allowed = [tool for tool in tools if policy.allows(principal, "tools", tool)]
        described: list[str] = []
        for tool in allowed:
            limits = policy.rate_limits(principal, tool)
            suffix = f" ({'; '.join(limit.describe() for _, limit in limits)})" if limits else ""
            described.append(tool + suffix)
        if not allowed:
            cell = "none"
        elif len(allowed) == len(tools) and not any(policy.rate_limits(principal, tool) for tool in tools):
            cell = f"all {len(tools)} tools"
        else:
            cell = ", ".join(described)
        for kind in ("resources", "prompts"):
            if policy.governs(kind):
                allow = sorted({g for r in policy.rules if r.applies_to(principal) for g in r.allow.get(kind, ())})
                deny = sorted({g for r in policy.rules if r.applies_to(principal) for g in r.deny.get(kind, ())})
                cell += f"; {kind}: allow {', '.join(allow) or 'none'}" + (f", deny {', '.join(deny)}" if deny else "")
        rows.append((label, cell))
    width = max(len(label) for label, _ in rows)
    return [f"{label:<{width}}  {cell}" for label, cell in rows]
