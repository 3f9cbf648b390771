"""`REQUEST_FAILED`: what an `httpx2` request raises when it could not be made or completed.

Below both rooms: the client's upstream requests and the server's requests to its authorization server and token
endpoints catch the same failures, and the server must not import the client to learn them.
"""

from __future__ import annotations

from typing import Final

import httpx2

__all__ = ["REQUEST_FAILED"]

REQUEST_FAILED: Final[tuple[type[Exception], ...]] = (httpx2.HTTPError, httpx2.InvalidURL)
"""What an httpx2 request raises when it could not be made or completed: catch this, not `httpx2.HTTPError` alone.

`httpx2.InvalidURL` is no `HTTPError`, so a malformed URL taken from someone else's metadata or config (a token
endpoint, a JWKS URI) would otherwise escape as a crash instead of failing like an unreachable server.
"""
