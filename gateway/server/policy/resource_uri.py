"""Resource URIs as a policy matches them: one spelling per resource, and no spelling an upstream may read otherwise.

RFC 3986 lets one resource be spelled several ways: `%73ecret` is `secret` (section 6.2.2.2), `%3a` is `%3A`,
`FILE:` is `file:`. A policy matching the spelling would deny `files+file:///secret/*` and allow
`files+file:///%73ecret/key.txt`. So a policy matches a URI's normal form (`normal_uri`), and reads its globs in
that form too: scheme in lower case, percent-escapes of unreserved characters decoded, the others in upper case.
A host's case is kept (many MCP servers name things by the authority, `memo://Today`); a deny rule also matches
the host in any case, since other servers read hosts case-insensitively (`fold_host`). A local file has three
spellings (RFC 8089): `file:/p`, `file://localhost/p` and `file:///p`, all matched as the last (so is a
`prefix+file:` URI).

Some spellings cannot be matched safely at all, because what they name is up to the upstream: dot segments
(`/public/../secret`, also spelled `%2e%2e`), which a file server may resolve; an encoded `/` or a `\\` in the path
(`..%2fsecret`), which a server may decode into a separator before resolving; a `\\` in the authority, which
WHATWG URL parsers read as the path's start (`https://host\\secret`); an empty path segment (`file:////secret`),
which a file system reads as one `/`; a file URI naming another host than `localhost`, whose path servers read as
a local one; a double percent-encoding (`%252e`); a scheme not in lower case (the gateway routes `prefix+...` by
its exact spelling). `ambiguity` says what makes a
URI such a one; while a policy governs resources, the policy guard refuses it with an error saying so, so the
upstream is never asked for a URI other than the one the policy allowed.
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import unquote

__all__ = ["ambiguity", "normal_uri"]

# RFC 3986, appendix B: scheme, authority, path, query, fragment (any string matches).
_PARTS: Final = re.compile(r"^(?:([^:/?#]+):)?(?://([^/?#]*))?([^?#]*)(\?[^#]*)?(#.*)?$", re.DOTALL)
_ESCAPE: Final = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_ENCODED_SLASH: Final = re.compile(r"%2f", re.IGNORECASE)
_ENCODED_BACKSLASH: Final = re.compile(r"%5c", re.IGNORECASE)
_DOUBLE_ENCODED: Final = re.compile(r"%25[0-9A-Fa-f]{2}")


def _escape(match: re.Match[str]) -> str:
    char = chr(int(match.group(1), 16))
    return char if char in _UNRESERVED else f"%{match.group(1).upper()}"


def _normal_escapes(text: str) -> str:
    return _ESCAPE.sub(_escape, text)


def _parts(uri: str) -> tuple[str | None, str | None, str, str, str]:
    match = _PARTS.match(uri)
    assert match is not None  # every part is optional: any string matches
    scheme, authority, path, query, fragment = match.groups()
    return scheme, authority, path, query or "", fragment or ""


def _is_file(scheme: str | None) -> bool:
    return scheme is not None and (scheme.lower() == "file" or scheme.lower().endswith("+file"))


def normal_uri(uri: str, *, fold_host: bool = False) -> str:
    """`uri` in RFC 3986 normal form (section 6.2.2, without dot-segment removal: see `ambiguity`).

    Args:
        uri: a resource URI, or a glob over them (`*`, `?` and `[...]` pass through).
        fold_host: put the host (with its port) in lower case too.
    """
    scheme, authority, path, query, fragment = _parts(uri)
    normal = "" if scheme is None else scheme.lower() + ":"
    if _is_file(scheme) and (authority is None or _normal_escapes(authority).lower() == "localhost"):
        authority = "" if authority is not None or path.startswith("/") else None
    if authority is not None:
        userinfo, at, host = authority.rpartition("@")
        host = _normal_escapes(host)
        normal += "//" + _normal_escapes(userinfo) + at + (host.lower() if fold_host else host)
    return normal + _normal_escapes(path) + _normal_escapes(query) + _normal_escapes(fragment)


def ambiguity(uri: str) -> str | None:
    """What in `uri` may make it name another resource upstream than the one a policy matched, or None."""
    scheme, authority, path, _, _ = _parts(uri)
    if scheme is not None and scheme != scheme.lower():
        return "a scheme not in lower case"
    if "\\" in (authority or "") + path or _ENCODED_BACKSLASH.search(path):
        return "a backslash ('\\' or %5C), which some servers read as '/'"
    if _is_file(scheme) and authority and _normal_escapes(authority).lower() != "localhost":
        return "a host in a file URI, whose path some servers read as a local one"
    if path.startswith("/") and "//" in path:
        return "an empty path segment ('//'), which a file system reads as one '/'"
    if _ENCODED_SLASH.search(path):
        return "an encoded slash (%2F), which some servers decode into a path separator"
    if _DOUBLE_ENCODED.search(path):
        return "a double percent-encoding (%25 and two hex digits)"
    if any(segment in {".", ".."} for segment in unquote(path).split("/")):
        return "a dot segment ('.' or '..', also as %2E), which some servers resolve"
    return None
