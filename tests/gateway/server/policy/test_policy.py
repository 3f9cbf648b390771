"""Policy rules and token buckets, evaluated directly (the HTTP suites check them with real tokens)."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.config.access import PolicyConfig, policy_of
from gateway.server.identity import Principal
from gateway.server.policy.rate_limit import RateLimit, RateLimiter
from gateway.server.policy.rules import Policy


def policy(*rules: dict[str, Any], clock: list[float] | None = None) -> Policy:
    built = policy_of([PolicyConfig.model_validate(rule) for rule in rules])
    assert built is not None
    if clock is None:
        return built
    return Policy(built.rules, limiter=RateLimiter(lambda: clock[0]))


ADMIN = Principal("alice", {"groups": ["staff", "admins"]})
USER = Principal("bob", {"groups": ["staff"]})
SERVICE = Principal("svc-backup")


def test_a_rule_applies_by_principal_glob_and_by_every_claim_it_names() -> None:
    rules = policy(
        {"claims": {"groups": ["adm*"]}, "allowTools": ["*"]},
        {"principals": ["svc-*"], "allowTools": ["backup_*"]},
    )
    assert rules.allows(ADMIN, "tools", "git_push")
    assert not rules.allows(USER, "tools", "git_push")
    assert rules.allows(SERVICE, "tools", "backup_run")
    assert not rules.allows(SERVICE, "tools", "git_push")


def test_deny_wins_over_allow_and_a_principal_no_rule_is_for_gets_nothing() -> None:
    rules = policy(
        {"allowTools": ["*"], "denyTools": ["*_delete"]}, {"principals": ["bob"], "allowTools": ["x_delete"]}
    )
    assert rules.allows(USER, "tools", "x_read")
    assert not rules.allows(USER, "tools", "x_delete")
    only_bob = policy({"principals": ["bob"], "allowTools": ["*"]})
    assert not only_bob.allows(ADMIN, "tools", "x_read")


def test_a_kind_no_rule_mentions_stays_open() -> None:
    rules = policy({"principals": ["bob"], "allowTools": ["time_*"]})
    assert rules.allows(ADMIN, "resources", "memo://today")
    assert rules.allows(ADMIN, "prompts", "plan")
    assert not rules.allows(ADMIN, "tools", "time_now")
    with_resources = policy({"allowTools": ["*"]}, {"principals": ["bob"], "allowResources": ["memo://*"]})
    assert with_resources.allows(USER, "resources", "memo://today")
    assert not with_resources.allows(ADMIN, "resources", "memo://today")


def test_a_rate_limit_counts_per_principal_and_tool_and_says_when_to_retry() -> None:
    clock = [1000.0]
    rules = policy({"allowTools": ["*"], "rateLimit": {"calls": 2, "perSeconds": 10}}, clock=clock)
    assert [rules.take(USER, "add")[0] for _ in range(2)] == [0.0, 0.0]
    wait, limit = rules.take(USER, "add")
    assert wait == pytest.approx(5.0)
    assert limit is not None
    assert limit.describe() == "2 calls per 10 s"
    assert rules.take(USER, "greet") == (0.0, None)  # another tool, another bucket
    assert rules.take(ADMIN, "add") == (0.0, None)  # another principal, another bucket
    clock[0] += 5.0
    assert rules.take(USER, "add") == (0.0, None)


def test_a_refused_call_spends_nothing_from_any_bucket() -> None:
    clock = [0.0]
    limiter = RateLimiter(lambda: clock[0])
    slow, fast = RateLimit(1, 100.0), RateLimit(5, 1.0)
    assert limiter.take([("slow", slow), ("fast", fast)]) == 0.0
    assert limiter.take([("slow", slow), ("fast", fast)]) == pytest.approx(100.0)
    assert [limiter.take([("fast", fast)]) for _ in range(4)] == [0.0] * 4  # the refused call took none of these


def test_a_token_given_back_refills_its_bucket_and_a_full_bucket_is_not_kept() -> None:
    clock = [0.0]
    limiter = RateLimiter(lambda: clock[0])
    limit = RateLimit(2, 100.0)
    assert [limiter.take([("key", limit)]) for _ in range(2)] == [0.0, 0.0]
    limiter.give_back([("key", limit)])
    assert (limiter.take([("key", limit)]), limiter.kept) == (0.0, 1)
    limiter.give_back([("key", limit)])
    limiter.give_back([("key", limit)])
    assert limiter.kept == 0


def test_a_rule_limits_only_the_tools_it_allows() -> None:
    rules = policy({"allowTools": ["*"]}, {"allowTools": ["git_*"], "rateLimit": {"calls": 1, "perSeconds": 60}})
    assert [rules.take(USER, "time_now")[0] for _ in range(3)] == [0.0, 0.0, 0.0]
    assert rules.take(USER, "git_push")[0] == 0.0
    assert rules.take(USER, "git_push")[0] > 0


def test_a_resource_rule_matches_every_spelling_of_a_uri() -> None:
    rules = policy({"allowResources": ["*"], "denyResources": ["files+file:///secret/*"]})
    for spelled in (
        "files+file:///secret/key.txt",
        "files+file:///%73ecret/key.txt",
        "FILES+FILE:///secret/key.txt",
        "files+file:///s%65cr%65t/key%2Etxt",
    ):
        assert not rules.allows(USER, "resources", spelled), spelled
    assert rules.allows(USER, "resources", "files+file:///public/%72eadme.txt")


def test_a_resource_deny_matches_the_host_in_any_case_and_an_allow_only_in_its_own() -> None:
    rules = policy({"allowResources": ["memo://Public/*", "memo://*"], "denyResources": ["memo://Secret/*"]})
    for spelled in ("memo://Secret/key", "memo://secret/key", "memo://SECRET/key", "memo://%53ecret/key"):
        assert not rules.allows(USER, "resources", spelled), spelled
    only_public = policy({"allowResources": ["memo://Public/*", "memo://%7Euser/*"]})
    assert only_public.allows(USER, "resources", "memo://Public/notes")
    assert not only_public.allows(USER, "resources", "memo://public/notes")
    assert only_public.allows(USER, "resources", "memo://~user/notes")
