"""How a client authenticates itself to an OAuth 2.0 token endpoint (RFC 6749 §2.3.1).

`client_secret_basic` sends id and secret in an `Authorization: Basic` header (each form-urlencoded before they
are joined and base64-encoded); `client_secret_post` sends both in the form; `none` (a public client) sends only
the id. A basic client without a secret sends its id in the form.
"""

from __future__ import annotations

import base64
from typing import Literal
from urllib.parse import quote

__all__ = ["ClientAuthMethod", "authenticate_client"]

ClientAuthMethod = Literal["client_secret_basic", "client_secret_post", "none"]


def authenticate_client(
    form: dict[str, str], client_id: str | None, client_secret: str | None, method: ClientAuthMethod
) -> tuple[dict[str, str], dict[str, str]]:
    """The token request's form and headers, with the client's authentication added (no id: unchanged)."""
    headers = {"Accept": "application/json"}
    if client_id is None:
        return form, headers
    if method == "client_secret_basic" and client_secret:
        pair = f"{quote(client_id, safe='')}:{quote(client_secret, safe='')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        return form, headers
    form = {**form, "client_id": client_id}
    if method == "client_secret_post" and client_secret:
        form["client_secret"] = client_secret
    return form, headers
