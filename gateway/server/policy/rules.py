"""Who may use which tool, resource and prompt, and how often: the config's `policies`, evaluated.

A rule is for the principals whose name matches one of its `principals` globs and whose claims hold every one
of its `claims` (a list claim such as `groups` must contain a matching value). For each kind (tools, resources,
prompts) a name is allowed when a rule for the principal allows it and no rule for the principal denies it
(deny wins). A kind that no rule mentions is not governed: everything of it is allowed, so a policy about
tools does not hide resources. With no policy at all, everything is allowed. Resource URIs and their globs are
matched in RFC 3986 normal form, a deny in any case of the URI's host (`gateway.server.policy.resource_uri`).

A rule's `rate_limit` is a token bucket per principal and tool, for the tools the rule allows (all tools when it
allows none explicitly); a call must find a token in every bucket that applies.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any, Literal, cast

from gateway.server.identity import Principal
from gateway.server.policy.rate_limit import RateLimit, RateLimiter
from gateway.server.policy.resource_uri import normal_uri

__all__ = ["KINDS", "Kind", "Policy", "PolicyRule", "RateLimit"]

Kind = Literal["tools", "resources", "prompts"]
KINDS: tuple[Kind, ...] = ("tools", "resources", "prompts")


def _matches(value: str, globs: tuple[str, ...]) -> bool:
    return any(fnmatchcase(value, glob) for glob in globs)


@functools.lru_cache(maxsize=256)
def _normal_globs(globs: tuple[str, ...], fold_host: bool) -> tuple[str, ...]:
    return tuple(normal_uri(glob, fold_host=fold_host) for glob in globs)


def _uri_matches(uri: str, globs: tuple[str, ...], *, fold_host: bool = False) -> bool:
    """Whether `uri` matches a glob, both in normal form (`gateway.server.policy.resource_uri`); with `fold_host`, also
    whatever the case of the host."""
    if _matches(normal_uri(uri), _normal_globs(globs, False)):
        return True
    return fold_host and _matches(normal_uri(uri, fold_host=True), _normal_globs(globs, True))


def _claim_values(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [str(item) for item in cast("list[Any]", value)]
    return [] if value is None else [str(value)]


@dataclass(frozen=True)
class PolicyRule:
    """One rule of a policy.

    Attributes:
        principals: globs over principal names.
        claims: claim name → accepted values (globs); every named claim must hold one.
        allow: kind → globs it allows (a kind absent: the rule allows nothing of it).
        deny: kind → globs it denies.
        rate_limit: the bucket per principal and tool for the tools this rule allows.
    """

    principals: tuple[str, ...] = ("*",)
    claims: Mapping[str, tuple[str, ...]] = field(default_factory=dict[str, tuple[str, ...]])
    allow: Mapping[Kind, tuple[str, ...]] = field(default_factory=dict[Kind, tuple[str, ...]])
    deny: Mapping[Kind, tuple[str, ...]] = field(default_factory=dict[Kind, tuple[str, ...]])
    rate_limit: RateLimit | None = None

    def applies_to(self, principal: Principal) -> bool:
        """Whether this rule is for `principal`."""
        if not _matches(principal.name, self.principals):
            return False
        return all(
            any(_matches(value, accepted) for value in _claim_values(principal.claims.get(name)))
            for name, accepted in self.claims.items()
        )

    def mentions(self, kind: Kind) -> bool:
        """Whether this rule says anything about `kind`."""
        return kind in self.allow or bool(self.deny.get(kind))

    def limits(self, tool: str) -> bool:
        """Whether this rule's rate limit counts calls of `tool`."""
        return self.rate_limit is not None and ("tools" not in self.allow or _matches(tool, self.allow["tools"]))


class Policy:
    """The rules, and the rate-limit buckets they fill."""

    def __init__(self, rules: tuple[PolicyRule, ...], *, limiter: RateLimiter | None = None) -> None:
        self.rules = rules
        self._governed = {kind: any(rule.mentions(kind) for rule in rules) for kind in KINDS}
        self._limiter = limiter or RateLimiter()

    def governs(self, kind: Kind) -> bool:
        """Whether any rule says anything about `kind` (otherwise all of it is allowed)."""
        return self._governed[kind]

    def allows(self, principal: Principal, kind: Kind, name: str) -> bool:
        """Whether `principal` may see and use the `kind` named `name` (a tool name, resource URI, prompt name)."""
        if not self._governed[kind]:
            return True
        rules = [rule for rule in self.rules if rule.applies_to(principal)]
        if kind == "resources":
            # Every spelling of a URI is matched as one; a deny in any case of the host, an allow only in its own.
            if any(_uri_matches(name, rule.deny.get(kind, ()), fold_host=True) for rule in rules):
                return False
            return any(kind in rule.allow and _uri_matches(name, rule.allow[kind]) for rule in rules)
        if any(_matches(name, rule.deny.get(kind, ())) for rule in rules):
            return False
        return any(kind in rule.allow and _matches(name, rule.allow[kind]) for rule in rules)

    def rate_limits(self, principal: Principal, tool: str) -> list[tuple[int, RateLimit]]:
        """The rate limits (with their rule's index) that count a call of `tool` by `principal`."""
        return [
            (index, rule.rate_limit)
            for index, rule in enumerate(self.rules)
            if rule.rate_limit is not None and rule.applies_to(principal) and rule.limits(tool)
        ]

    def take(self, principal: Principal, tool: str) -> tuple[float, RateLimit | None]:
        """Count one call; returns (0, None), or the seconds to wait and the limit that refused it."""
        limits = self.rate_limits(principal, tool)
        if not limits:
            return 0.0, None
        wait = self._limiter.take([((index, principal.name, tool), limit) for index, limit in limits])
        if wait <= 0:
            return 0.0, None
        slowest = max(limits, key=lambda item: 1.0 / item[1].rate)[1]
        return wait, slowest

    def give_back(self, principal: Principal, tool: str) -> None:
        """Undo a `take` that counted a call, for a call that did nothing (its tool does not exist)."""
        limits = self.rate_limits(principal, tool)
        self._limiter.give_back([((index, principal.name, tool), limit) for index, limit in limits])
