"""The small HTML pages the sign-in routes answer with (the callback, the secret-entry page)."""

from __future__ import annotations

import html

from starlette.responses import HTMLResponse

__all__ = ["invalid_link_page", "page"]


def invalid_link_page() -> HTMLResponse:
    """The answer to an unknown, used or expired `state`."""
    return page(
        400,
        "Sign-in link not valid",
        "This sign-in link is unknown, already used or expired. Go back to your MCP client and call the tool "
        "again to get a new one.",
    )


def page(status: int, title: str, text: str, form: str = "") -> HTMLResponse:
    """A minimal HTML page (title, one paragraph, an optional form's markup); never cached, never referred."""
    body = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title></head>"
        f"<body><h1>{html.escape(title)}</h1><p>{html.escape(text)}</p>{form}</body></html>"
    )
    return HTMLResponse(
        body, status_code=status, headers={"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}
    )
