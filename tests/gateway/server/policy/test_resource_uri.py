"""Resource URIs in the form a policy matches, and the spellings it refuses to match."""

from __future__ import annotations

import pytest

from gateway.server.policy.resource_uri import ambiguity, normal_uri


@pytest.mark.parametrize(
    ("spelled", "normal"),
    [
        ("files+file:///secret/key.txt", "files+file:///secret/key.txt"),
        ("files+file:///%73ecret/key%2Etxt", "files+file:///secret/key.txt"),
        ("FILES+FILE:///secret/key.txt", "files+file:///secret/key.txt"),
        ("https://User@EXAMPLE.com:8443/A%3a%7e?q=%2d#%5f", "https://User@EXAMPLE.com:8443/A%3A~?q=-#_"),
        ("memo://Today", "memo://Today"),
        ("files+file:///public/*", "files+file:///public/*"),
        ("memo://{day}", "memo://{day}"),
        ("urn:x:%41", "urn:x:A"),
        ("files+file:/secret/key.txt", "files+file:///secret/key.txt"),
        ("file://localhost/secret/key.txt", "file:///secret/key.txt"),
        ("files+file://LocalHost/secret/*", "files+file:///secret/*"),
        ("file:relative/name", "file:relative/name"),
    ],
)
def test_a_uri_is_matched_in_its_rfc_3986_normal_form(spelled: str, normal: str) -> None:
    assert normal_uri(spelled) == normal


def test_a_host_keeps_its_case_unless_folded() -> None:
    assert normal_uri("memo://Today/%41") == "memo://Today/A"
    assert normal_uri("https://User@EXAMPLE.com:8443/A", fold_host=True) == "https://User@example.com:8443/A"


@pytest.mark.parametrize(
    ("uri", "named"),
    [
        ("files+file:///public/../secret/key.txt", "dot segment"),
        ("files+file:///public/%2e%2e/secret/key.txt", "dot segment"),
        ("files+file:///public/%2E./secret/key.txt", "dot segment"),
        ("files+file:///public/./key.txt", "dot segment"),
        ("files+file:///public/..", "dot segment"),
        ("files+file:///public/..%2fsecret/key.txt", "encoded slash"),
        ("files+file:///public/..%5Csecret", "backslash"),
        ("files+file:///public\\..\\secret", "backslash"),
        ("files+file:///public/%252e%252e/secret", "double percent-encoding"),
        ("FILES+FILE:///public/readme.txt", "scheme not in lower case"),
        ("files+file://\\secret\\key.txt", "backslash"),
        ("https://example.com\\secret", "backslash"),
        ("files+file://elsewhere/secret/key.txt", "host in a file URI"),
        ("files+file:////secret/key.txt", "empty path segment"),
        ("https://example.com/public//secret", "empty path segment"),
    ],
)
def test_a_uri_an_upstream_may_resolve_elsewhere_is_named_ambiguous(uri: str, named: str) -> None:
    reason = ambiguity(uri)
    assert reason is not None
    assert named in reason


@pytest.mark.parametrize(
    "uri",
    [
        "files+file:///public/readme.txt",
        "files+file:///public/..hidden/a.b",
        "files+file:///public/100%25.txt",
        "memo://today",
        "memo://{day}",
        "https://example.com/a?path=../b",
        "files+file://localhost/public/readme.txt",
        "cache:https://example.com/a",
    ],
)
def test_a_plain_uri_is_not_ambiguous(uri: str) -> None:
    assert ambiguity(uri) is None
