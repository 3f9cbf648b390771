"""The server's own page where a user enters a secret a tool asked for: an API key, a bearer token, a password.

MCP forbids asking for secrets through form elicitation (2025-11-25: "Servers MUST NOT use form mode elicitation to
request sensitive information"); they go through URL mode instead, to a page outside the MCP client. For a tool
whose `AuthConfig` has an `APIKey`, `HTTPBearer` or `HTTPBase` scheme, the server sends the user (URL-mode
elicitation) to its sign-in link (`gateway.server.sign_in.link`), which binds the user's browser and goes on to
`GET /oauth/secret?state=…`, a form that only that browser may see or submit; its `POST` stores the secret as the
user's credential, once per `state` (single-use, expiring, bound to principal, session, tool and credential key, as
a sign-in's), and the call waiting for it runs the tool again. The page is open to anyone who can reach the server,
so its `POST` reads the URL-encoded form its own page sends and nothing else, at most `_MAX_FORM_BYTES` of it.
"""

from __future__ import annotations

import html
from collections.abc import Awaitable, Callable
from typing import Final
from urllib.parse import parse_qsl

from starlette.requests import Request
from starlette.responses import Response

from gateway.server.sign_in.pages import invalid_link_page, page
from gateway.server.sign_in.sign_ins import SignIns
from gateway.tools import (
    APIKey,
    AuthConfig,
    AuthCredential,
    AuthCredentialTypes,
    HttpAuth,
    HTTPBase,
    HttpCredentials,
)

__all__ = ["ENTRY_PATH", "entry_endpoint", "entry_fields"]

ENTRY_PATH: Final = "/oauth/secret"
_MAX_LENGTH: Final = 8192
_MAX_FORM_BYTES: Final = 256 * 1024
"""The longest body the entry form sends: three fields of `_MAX_LENGTH` characters, each up to 12 bytes encoded."""
_FORM_TYPE: Final = "application/x-www-form-urlencoded"

Field = tuple[str, str, str]
"""(form field name, label, input type)."""


def entry_fields(config: AuthConfig) -> list[Field] | None:
    """The fields the page asks for `config`'s scheme; None for a scheme the user cannot type in (OAuth2)."""
    scheme = config.auth_scheme
    if isinstance(scheme, APIKey):
        return [("secret", f"API key ({scheme.name})", "password")]
    if isinstance(scheme, HTTPBase):
        if scheme.scheme.lower() == "basic":
            return [("username", "User name", "text"), ("password", "Password", "password")]
        return [("secret", f"{scheme.scheme.capitalize()} token", "password")]
    return None


def _credential(config: AuthConfig, values: dict[str, str]) -> AuthCredential:
    scheme = config.auth_scheme
    if isinstance(scheme, APIKey):
        return AuthCredential(auth_type=AuthCredentialTypes.API_KEY, api_key=values["secret"])
    assert isinstance(scheme, HTTPBase)
    if scheme.scheme.lower() == "basic":
        credentials = HttpCredentials(username=values["username"], password=values["password"])
    else:
        credentials = HttpCredentials(token=values["secret"])
    return AuthCredential(
        auth_type=AuthCredentialTypes.HTTP, http=HttpAuth(scheme=scheme.scheme, credentials=credentials)
    )


def _not_this_browser() -> Response:
    return page(
        403,
        "Not this browser",
        "This page belongs to a sign-in link opened in another browser; only that browser can enter the credential. "
        "Nothing was stored. Open the link from your MCP client.",
    )


class _FormTooLargeError(ValueError):
    pass


async def _entry_form(request: Request) -> dict[str, str]:
    """The posted entry form, read up to `_MAX_FORM_BYTES` (a multipart body is no entry form: never spooled).

    Raises:
        _FormTooLargeError: the body is longer.
        ValueError: it is not a URL-encoded UTF-8 form of a few fields.
    """
    if request.headers.get("content-type", "").partition(";")[0].strip().lower() != _FORM_TYPE:
        raise ValueError(f"not {_FORM_TYPE}")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > _MAX_FORM_BYTES:
            raise _FormTooLargeError
    return dict(parse_qsl(body.decode(), keep_blank_values=True, max_num_fields=8))


def entry_endpoint(sign_ins: SignIns) -> Callable[[Request], Awaitable[Response]]:
    """`GET` and `POST /oauth/secret` over `sign_ins` (see the module docstring)."""

    async def endpoint(request: Request) -> Response:
        if request.method == "GET":
            pending = await sign_ins.peek(request.query_params.get("state", ""))
            fields = entry_fields(pending.auth_config) if pending is not None and pending.tokens is None else None
            if pending is None or fields is None:
                return invalid_link_page()
            if not await sign_ins.from_bound_browser(pending, request):
                return _not_this_browser()
            inputs = "".join(
                f"<p><label>{html.escape(label)} <input name='{name}' type='{kind}' required "
                f"autocomplete='off' maxlength='{_MAX_LENGTH}'></label></p>"
                for name, label, kind in fields
            )
            form = (
                f"<form method='post' action='{ENTRY_PATH}'>"
                f"<input type='hidden' name='state' value='{html.escape(pending.state)}'>{inputs}"
                "<p><button type='submit'>Save</button></p></form>"
            )
            tool = pending.owner[1]
            return page(200, "Enter your credential", f"The tool {tool} needs it. It is stored encrypted.", form)
        try:
            form_data = await _entry_form(request)
        except _FormTooLargeError:
            return page(413, "Not saved", "The form was larger than this page sends. Nothing was stored.")
        except ValueError:
            return page(400, "Not saved", "This page takes the form it shows, and nothing else. Nothing was stored.")
        state = form_data.get("state", "")
        found = await sign_ins.peek(state)
        fields = entry_fields(found.auth_config) if found is not None and found.tokens is None else None
        if found is None or fields is None:
            return invalid_link_page()
        if not await sign_ins.from_bound_browser(found, request):
            return _not_this_browser()
        values = {name: form_data.get(name, "") for name, _, _ in fields}
        if any(not value or len(value) > _MAX_LENGTH for value in values.values()):
            return page(400, "Not saved", "Fill in every field (at most 8192 characters each) and try again.")
        pending = await sign_ins.take(state)
        if pending is None:
            return invalid_link_page()
        await sign_ins.complete(pending, _credential(pending.auth_config, values))
        return page(200, "Saved", "Your credential is saved. You can close this window and return to your MCP client.")

    return endpoint
