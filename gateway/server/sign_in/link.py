"""The page a sign-in link opens: it learns whose browser it is, and binds the sign-in to that browser alone.

MCP (2025-11-25, URL-mode elicitation) requires the server to verify that the user who completes a URL interaction
is the user who started it: a link is text, and whoever it is sent to could otherwise finish someone else's
sign-in, so that the starter's calls would run with the finisher's account. So the URL a client is sent is the
gateway's own `GET /oauth/sign-in?state=…`, never the provider's, and it does two things before anything else:

1. It learns whose browser this is. With inbound OAuth and a sign-in client (`OAuthSettings.sign_in_client`), the
   browser logs in at the gateway's authorization server (`gateway.server.sign_in.gateway_login`; back at
   `GET /oauth/login`) and its principal must be the principal whose call asked; any other user's login ends the
   sign-in at once, stores nothing, and both that browser's page and the waiting call say why. A server that tells
   principals apart but has no sign-in client starts no sign-in at all (`SignIns.unverifiable`). A server without
   auth has one principal (`local`, everyone who can reach it): there the first browser to open the link is taken
   as its user's, and any other browser is turned away.
2. It binds the sign-in to that browser (`gateway.server.sign_in.browser`) and only then sends it on to the
   provider (or to the secret-entry page). The provider's callback, and the entry page, act only for the bound
   browser: a provider URL carried to another browser ends the sign-in without storing anything.
"""

from __future__ import annotations

import logging
from typing import Final

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from gateway.oauth import new_code_verifier
from gateway.server.sign_in.browser import bind_cookie, forget_cookie, login_cookie, new_browser, set_login_cookie
from gateway.server.sign_in.gateway_login import LoginError
from gateway.server.sign_in.pages import invalid_link_page, page
from gateway.server.sign_in.pending import PendingSignIn
from gateway.server.sign_in.sign_ins import LINK_PATH, SignIns

__all__ = ["LOGIN_PATH", "SignInLinks"]

logger = logging.getLogger(__name__)

LOGIN_PATH: Final = "/oauth/login"
"""Where the gateway's own login returns (register `<base URL>/oauth/login` for the sign-in client)."""


def _onward(pending: PendingSignIn, request: Request, value: str, max_age: int) -> Response:
    """Send a bound browser on to the provider (or the entry page), carrying its binding cookie."""
    response = RedirectResponse(pending.url, status_code=303, headers={"Cache-Control": "no-store"})
    bind_cookie(response, request, pending.state, value, max_age)
    return response


class SignInLinks:
    """`GET /oauth/sign-in` and `GET /oauth/login` over `sign_ins` (see the module docstring)."""

    def __init__(self, sign_ins: SignIns) -> None:
        self._sign_ins = sign_ins

    def routes(self) -> list[Route]:
        """The two routes."""
        return [Route(LINK_PATH, self.open, methods=["GET"]), Route(LOGIN_PATH, self.logged_in, methods=["GET"])]

    async def open(self, request: Request) -> Response:
        """`GET /oauth/sign-in?state=…`: learn whose browser this is, bind it, send it on."""
        sign_ins = self._sign_ins
        state = request.query_params.get("state", "")
        pending = await sign_ins.peek(state)
        if pending is None:
            return invalid_link_page()
        if await sign_ins.from_bound_browser(pending, request):
            return RedirectResponse(pending.url, status_code=303, headers={"Cache-Control": "no-store"})
        max_age = int(sign_ins.lifetime)
        login = sign_ins.login
        if login is None:
            value, digest = new_browser()
            if not await sign_ins.bind_browser(pending, digest, first=True):
                return page(
                    403,
                    "Sign-in link already opened",
                    "This sign-in link was opened in another browser first, and only that browser can finish it. "
                    "Nothing was stored. To sign in here, call the tool again from your MCP client for a new link.",
                )
            return _onward(pending, request, value, max_age)
        verifier = new_code_verifier()
        try:
            url = await login.authorization_url(
                redirect_uri=self._login_redirect(pending), state=state, code_verifier=verifier
            )
        except LoginError as exc:
            logger.warning("A sign-in link could not start the gateway login: %s", exc)
            return page(502, "Sign-in unavailable", f"{exc} Try the link again later.")
        response = RedirectResponse(url, status_code=303, headers={"Cache-Control": "no-store"})
        set_login_cookie(response, request, state, verifier, max_age)
        return response

    async def logged_in(self, request: Request) -> Response:
        """`GET /oauth/login?code=…&state=…`: the browser's user is known; bind it if it is the one who asked."""
        sign_ins = self._sign_ins
        state = request.query_params.get("state", "")
        pending = await sign_ins.peek(state)
        login = sign_ins.login
        if pending is None or login is None:
            return invalid_link_page()
        verifier = request.cookies.get(login_cookie(state))
        code = request.query_params.get("code")
        if not verifier or not code:
            error = request.query_params.get("error") or "this browser did not start it"
            return page(
                400,
                "Not logged in",
                f"The gateway could not tell who you are ({error}). Open the sign-in link from your MCP client again.",
            )
        try:
            principal = await login.principal(code, redirect_uri=self._login_redirect(pending), code_verifier=verifier)
        except LoginError as exc:
            logger.warning("The gateway login of a sign-in link failed: %s", exc)
            return page(403, "Not logged in", f"{exc} Open the sign-in link from your MCP client again.")
        if principal != pending.principal:
            logger.warning(
                "A sign-in link of principal %r was opened by principal %r; refused", pending.principal, principal
            )
            refused = await sign_ins.refuse(
                state,
                f"The sign-in link for {pending.provider} was opened by another user of this gateway, so nothing "
                "was stored",
            )
            if not refused:
                return invalid_link_page()
            return page(
                403,
                "Sign-in refused",
                f"You are logged in to this gateway as {principal}, but this sign-in link was made for another user. "
                "Nothing was stored, and the link no longer works. If someone sent you this link, they may have "
                "wanted their requests to run with your account.",
            )
        value, digest = new_browser()
        if not await sign_ins.bind_browser(pending, digest, first=False):
            # Another browser of the same user was bound at this very moment; this one simply starts again.
            return page(409, "Try again", "This sign-in link was being opened in another browser. Open it again.")
        response = _onward(pending, request, value, int(sign_ins.lifetime))
        forget_cookie(response, login_cookie(state))
        return response

    @staticmethod
    def _login_redirect(pending: PendingSignIn) -> str:
        return pending.link.partition("?")[0].removesuffix(LINK_PATH) + LOGIN_PATH
