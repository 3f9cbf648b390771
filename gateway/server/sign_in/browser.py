"""The browser a sign-in is bound to: a cookie the gateway sets on it, and only a digest of it kept server side.

A sign-in link (`/oauth/sign-in?state=…`) is forwardable text; the browser that may finish the sign-in is not. When
the link's page has established whose browser it is (`gateway.server.sign_in.link`), it sets a random value in a
cookie named after the sign-in's `state` and keeps the value's SHA-256 with the pending sign-in. The provider's
callback and the secret-entry page then act only for a browser that presents that cookie: a link or provider URL
carried to another browser finishes nothing. The cookie is `HttpOnly`, `SameSite=Lax` (a provider's redirect back
is a top-level navigation, which Lax lets through), scoped to `/oauth`, `Secure` on HTTPS, and lives as long as
the sign-in.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Final

from starlette.requests import Request
from starlette.responses import Response

__all__ = [
    "bind_cookie",
    "binding_cookie",
    "browser_digest",
    "forget_cookie",
    "login_cookie",
    "new_browser",
    "presented",
    "set_login_cookie",
]

_PREFIX: Final = "adk_mcp_gateway_"
_PATH: Final = "/oauth"


def _suffix(state: str) -> str:
    # Named per sign-in, so one browser can hold several at once; the state itself never becomes a cookie name.
    return hashlib.sha256(state.encode()).hexdigest()[:24]


def binding_cookie(state: str) -> str:
    """The name of the cookie that binds a browser to the sign-in `state`."""
    return f"{_PREFIX}sign_in_{_suffix(state)}"


def login_cookie(state: str) -> str:
    """The name of the cookie holding the PKCE verifier of the gateway login a sign-in's link started."""
    return f"{_PREFIX}login_{_suffix(state)}"


def browser_digest(value: str) -> str:
    """What the server keeps of a binding cookie's value."""
    return hashlib.sha256(value.encode()).hexdigest()


def new_browser() -> tuple[str, str]:
    """A fresh binding: (cookie value, its digest)."""
    value = secrets.token_urlsafe(32)
    return value, browser_digest(value)


def presented(request: Request, state: str, bound: str | None) -> bool:
    """Whether the request's browser carries the binding cookie whose digest is `bound`."""
    value = request.cookies.get(binding_cookie(state))
    return bound is not None and value is not None and hmac.compare_digest(browser_digest(value), bound)


def _set(response: Response, request: Request, name: str, value: str, max_age: int) -> None:
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        path=_PATH,
        secure=request.url.scheme == "https",
        httponly=True,
        samesite="lax",
    )


def bind_cookie(response: Response, request: Request, state: str, value: str, max_age: int) -> None:
    """Set the binding cookie of sign-in `state` on the response's browser."""
    _set(response, request, binding_cookie(state), value, max_age)


def set_login_cookie(response: Response, request: Request, state: str, verifier: str, max_age: int) -> None:
    """Keep a gateway login's PKCE verifier in the browser that started it."""
    _set(response, request, login_cookie(state), verifier, max_age)


def forget_cookie(response: Response, name: str) -> None:
    """Delete a cookie this module set."""
    response.delete_cookie(name, path=_PATH)
