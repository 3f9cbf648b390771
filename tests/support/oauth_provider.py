"""A small real OAuth 2.1 authorization server on loopback, for tests.

    async with OAuthProvider() as provider:
        token = provider.mint("alice", scopes=["tools:read"], audience="http://127.0.0.1:8000/mcp")

It serves, over real HTTP on `127.0.0.1` (a random port), signing with `joserfc`:

- RFC 8414 metadata at `/.well-known/oauth-authorization-server{path}` (and the OIDC discovery spellings);
- the JWKS at `{path}/jwks`, with key rotation: `rotate_key()` signs new tokens with a new `kid` while old tokens
  verify until `retire_key(kid)`; `add_key(publish=False)` makes a key whose `kid` nobody can resolve;
  `break_jwks("error")` makes it answer 500, `break_jwks("hang")` never answer, until `mend_jwks()`;
- `{path}/token`: `client_credentials`, `authorization_code` (PKCE S256 required), `refresh_token` (rotated:
  each refresh token works once; `revoke()` ends one), RFC 8693 token exchange (the new token carries
  `act: {"sub": <client_id>}`);
- `{path}/authorize`, which approves without any UI and redirects with `code` and `state`: as the user a real browser
  signed in as at `{path}/login?user=NAME` (a cookie), else as `provider.user` (`provider.browser()` is a test
  "browser" for `mcp.client.auth.OAuthClientProvider`);
- RFC 7591 dynamic client registration at `{path}/register`;
- RFC 7662 introspection at `{path}/introspect` (client authentication required) for JWTs and for opaque
  tokens from `mint_opaque()`; RFC 7009 revocation at `{path}/revoke`.

Access tokens are RFC 9068 JWTs: `iss`, `sub`, `aud` (the RFC 8707 `resource` asked for, else the provider's
`audience`), `exp`, `iat`, `jti`, `client_id`, `scope` (space-separated), plus extra claims. `mint()` makes one
directly, with any claim bent for a negative test (expired, wrong issuer or audience, unknown key).

Counters for assertions: `jwks_fetches`, `introspections`, `token_requests`.
"""

from __future__ import annotations

import secrets
import socket
import time
from collections.abc import AsyncGenerator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, Literal
from urllib.parse import parse_qs, urlparse

import anyio
import httpx2
import uvicorn
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, KeySet, RSAKey
from mcp.shared.auth import AuthorizationCodeResult
from starlette.applications import Starlette

from tests.support._oauth_endpoints import TOKEN_EXCHANGE, Client, Endpoints, Grant, OAuthProviderError

__all__ = ["Browser", "Client", "OAuthProvider", "OAuthProviderError"]

Algorithm = Literal["RS256", "ES256"]
_CLOSE_DEADLINE = 10.0


class OAuthProvider:
    """The authorization server; use as an async context manager (it serves while the block runs)."""

    def __init__(
        self,
        *,
        path: str = "",
        algorithm: Algorithm = "RS256",
        audience: str | None = None,
        token_lifetime: int = 300,
        user: str = "alice",
        port: int = 0,
    ) -> None:
        """
        Args:
            path: the issuer's path (`/realms/test` gives issuer `http://127.0.0.1:PORT/realms/test`).
            algorithm: how tokens are signed.
            audience: the `aud` of tokens whose request names no `resource`.
            token_lifetime: seconds an issued access token lives.
            user: the subject `/authorize` approves as (change `provider.user`, `provider.user_claims` any time).
            port: the loopback port to serve on (default: a free one).
        """
        self.path = path.rstrip("/")
        self.algorithm: Algorithm = algorithm
        self.audience = audience
        self.token_lifetime = token_lifetime
        self.user = user
        self.user_claims: dict[str, Any] = {}
        self.jwks_fetches = 0
        self.jwks_outage: Literal["error", "hang"] | None = None
        self._jwks_mended: anyio.Event | None = None
        self.introspections = 0
        self.token_requests = 0
        self.clients: dict[str, Client] = {}
        self._keys: dict[str, RSAKey | ECKey] = {}
        self._published: list[str] = []
        self.current_kid = self.add_key(publish=True)
        self.codes: dict[str, Grant] = {}
        self.refresh_tokens: dict[str, Grant] = {}
        self.opaque_tokens: dict[str, dict[str, Any]] = {}
        self.revoked: set[str] = set()
        self._port = port

    # -- where it is --------------------------------------------------------------------------------------------

    @property
    def origin(self) -> str:
        """`http://127.0.0.1:PORT`."""
        return f"http://127.0.0.1:{self._port}"

    @property
    def login_cookie(self) -> str:
        """The cookie that says who a browser signed in as at `/login` (named per port: cookies ignore ports)."""
        return f"oauth_provider_user_{self._port}"

    @property
    def login_url(self) -> str:
        """`/login`: open `login_url + "?user=NAME"` in a browser to sign it in as NAME."""
        return f"{self.issuer}/login"

    @property
    def issuer(self) -> str:
        """The issuer identifier (`iss` of its tokens, `issuer` of its metadata)."""
        return self.origin + self.path

    @property
    def metadata_url(self) -> str:
        """The RFC 8414 metadata URL (path-aware)."""
        return f"{self.origin}/.well-known/oauth-authorization-server{self.path}"

    @property
    def jwks_uri(self) -> str:
        return f"{self.issuer}/jwks"

    @property
    def token_endpoint(self) -> str:
        return f"{self.issuer}/token"

    @property
    def authorization_endpoint(self) -> str:
        return f"{self.issuer}/authorize"

    @property
    def registration_endpoint(self) -> str:
        return f"{self.issuer}/register"

    @property
    def introspection_endpoint(self) -> str:
        return f"{self.issuer}/introspect"

    @property
    def revocation_endpoint(self) -> str:
        return f"{self.issuer}/revoke"

    def metadata(self) -> dict[str, Any]:
        """The authorization server metadata document."""
        return {
            "issuer": self.issuer,
            "authorization_endpoint": self.authorization_endpoint,
            "token_endpoint": self.token_endpoint,
            "jwks_uri": self.jwks_uri,
            "registration_endpoint": self.registration_endpoint,
            "introspection_endpoint": self.introspection_endpoint,
            "revocation_endpoint": self.revocation_endpoint,
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials", TOKEN_EXCHANGE],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
            "code_challenge_methods_supported": ["S256"],
            "id_token_signing_alg_values_supported": [self.algorithm],
            "subject_types_supported": ["public"],
        }

    # -- keys ---------------------------------------------------------------------------------------------------

    def add_key(self, *, publish: bool = False) -> str:
        """A new signing key; returns its `kid`. Unpublished, tokens signed with it name a `kid` no JWKS has."""
        kid = f"key-{len(self._keys) + 1}-{secrets.token_hex(4)}"
        parameters: Any = {"kid": kid, "use": "sig", "alg": self.algorithm}
        if self.algorithm == "RS256":
            key: RSAKey | ECKey = RSAKey.generate_key(2048, parameters=parameters, private=True)
        else:
            key = ECKey.generate_key("P-256", parameters=parameters, private=True)
        self._keys[kid] = key
        if publish:
            self._published.append(kid)
        return kid

    def rotate_key(self) -> str:
        """Publish a new key and sign new tokens with it; tokens of older keys verify until `retire_key`."""
        self.current_kid = self.add_key(publish=True)
        return self.current_kid

    def retire_key(self, kid: str) -> None:
        """Remove a key from the JWKS (tokens signed with it no longer verify for a client that refetches)."""
        self._published.remove(kid)

    def jwks(self) -> dict[str, Any]:
        """The published public keys."""
        return dict(KeySet([self._keys[kid] for kid in self._published]).as_dict(private=False))

    def break_jwks(self, outage: Literal["error", "hang"]) -> None:
        """Make the JWKS endpoint answer 500 (`error`) or hold every request unanswered (`hang`) until mended."""
        self.jwks_outage = outage
        if outage == "hang" and self._jwks_mended is None:
            self._jwks_mended = anyio.Event()

    def mend_jwks(self) -> None:
        """Serve the JWKS again (held requests are answered now); the provider mends it when it stops too."""
        self.jwks_outage = None
        if self._jwks_mended is not None:
            self._jwks_mended.set()
            self._jwks_mended = None

    async def jwks_outage_over(self) -> None:
        """Wait while the JWKS endpoint hangs (returns at once otherwise)."""
        if self._jwks_mended is not None:
            await self._jwks_mended.wait()

    # -- tokens -------------------------------------------------------------------------------------------------

    def mint(
        self,
        subject: str = "alice",
        *,
        scopes: Iterable[str] = (),
        audience: str | Sequence[str] | None = None,
        expires_in: int | None = None,
        not_before: int | None = None,
        issuer: str | None = None,
        kid: str | None = None,
        client_id: str = "test-client",
        claims: Mapping[str, Any] | None = None,
    ) -> str:
        """A signed access token, as the token endpoint would issue it, with any claim overridable.

        Args:
            subject: `sub`.
            scopes: the `scope` claim.
            audience: `aud` (default: the provider's `audience`; none at all if that is None too).
            expires_in: seconds from now to `exp` (negative: already expired; default `token_lifetime`).
            not_before: `nbf` as seconds from now (positive: not yet valid).
            issuer: `iss` (default: this provider's issuer).
            kid: sign with this key (default: the current one).
            client_id: the `client_id` claim.
            claims: extra claims (e.g. `groups`), applied last.
        """
        now = int(time.time())
        body: dict[str, Any] = {
            "iss": issuer if issuer is not None else self.issuer,
            "sub": subject,
            "iat": now,
            "exp": now + (self.token_lifetime if expires_in is None else expires_in),
            "jti": secrets.token_hex(8),
            "client_id": client_id,
        }
        aud = audience if audience is not None else self.audience
        if aud is not None:
            body["aud"] = aud if isinstance(aud, str) else list(aud)
        scope = " ".join(scopes)
        if scope:
            body["scope"] = scope
        if not_before is not None:
            body["nbf"] = now + not_before
        body.update(claims or {})
        key = self._keys[kid or self.current_kid]
        return jwt.encode({"alg": self.algorithm, "kid": key.kid, "typ": "at+jwt"}, body, key)

    def mint_opaque(
        self,
        subject: str = "alice",
        *,
        scopes: Iterable[str] = (),
        audience: str | None = None,
        expires_in: int | None = None,
        client_id: str = "test-client",
        claims: Mapping[str, Any] | None = None,
    ) -> str:
        """A random (non-JWT) access token that only introspection can explain."""
        token = secrets.token_urlsafe(24)
        now = int(time.time())
        info: dict[str, Any] = {
            "active": True,
            "iss": self.issuer,
            "sub": subject,
            "client_id": client_id,
            "iat": now,
            "exp": now + (self.token_lifetime if expires_in is None else expires_in),
            "token_type": "Bearer",
        }
        scope = " ".join(scopes)
        if scope:
            info["scope"] = scope
        aud = audience if audience is not None else self.audience
        if aud is not None:
            info["aud"] = aud
        info.update(claims or {})
        self.opaque_tokens[token] = info
        return token

    def revoke(self, token: str) -> None:
        """End a refresh token or an opaque access token (introspection then says `active: false`)."""
        self.revoked.add(token)

    def decode(self, token: str) -> dict[str, Any] | None:
        """The claims of a JWT this provider signed with a published key (expiry not checked), else None."""
        try:
            return dict(jwt.decode(token, KeySet([self._keys[kid] for kid in self._published])).claims)
        except (JoseError, ValueError):
            return None

    def issue(
        self,
        client_id: str,
        subject: str,
        scopes: list[str],
        resource: str | None,
        claims: Mapping[str, Any],
        *,
        refresh: bool = False,
    ) -> dict[str, Any]:
        """A token response as the token endpoint sends it (with a refresh token if `refresh`)."""
        token = self.mint(subject, scopes=scopes, audience=resource, client_id=client_id, claims=claims)
        answer: dict[str, Any] = {"access_token": token, "token_type": "Bearer", "expires_in": self.token_lifetime}
        if scopes:
            answer["scope"] = " ".join(scopes)
        if refresh:
            refresh_token = secrets.token_urlsafe(32)
            self.refresh_tokens[refresh_token] = Grant(client_id, subject, scopes, resource, dict(claims))
            answer["refresh_token"] = refresh_token
        return answer

    # -- clients ------------------------------------------------------------------------------------------------

    def add_client(
        self,
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
        redirect_uris: Sequence[str] = (),
        grant_types: Sequence[str] = ("client_credentials",),
        scope: str | None = None,
        public: bool = False,
    ) -> Client:
        """Pre-register a client (confidential with a generated secret unless `public`)."""
        client = Client(
            client_id=client_id or f"client-{secrets.token_hex(6)}",
            client_secret=None if public else (client_secret or secrets.token_urlsafe(24)),
            redirect_uris=list(redirect_uris),
            grant_types=list(grant_types),
            token_endpoint_auth_method="none" if public else "client_secret_basic",
            scope=scope,
        )
        self.clients[client.client_id] = client
        return client

    def browser(self) -> Browser:
        """A test "browser" for `OAuthClientProvider(redirect_handler=..., callback_handler=...)`."""
        return Browser()

    # -- serving ------------------------------------------------------------------------------------------------

    @asynccontextmanager
    async def _serving(self) -> AsyncGenerator[OAuthProvider]:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", self._port))
            sock.listen(128)
            self._port = sock.getsockname()[1]
            app = Starlette(routes=Endpoints(self).routes())
            server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
            with anyio.CancelScope() as deadline:
                async with anyio.create_task_group() as tg:
                    # The socket already listens, so requests queue in its backlog until uvicorn accepts them.
                    tg.start_soon(server.serve, [sock])
                    try:
                        yield self
                    finally:
                        # The task group waits for uvicorn's graceful exit, bounded by the deadline.
                        self.mend_jwks()
                        server.should_exit = True
                        deadline.deadline = anyio.current_time() + _CLOSE_DEADLINE

    async def __aenter__(self) -> OAuthProvider:
        self._context = self._serving()
        return await self._context.__aenter__()

    async def __aexit__(self, *exc_info: Any) -> None:
        try:
            await self._context.__aexit__(*exc_info)
        except BaseExceptionGroup as group:
            # The serving task group wraps the block's own exception; let it propagate as raised.
            if not (len(group.exceptions) == 1 and group.exceptions[0] is exc_info[1]):
                raise


class Browser:
    """Follows the `/authorize` redirect the way a user agent would, without UI, and hands back code and state."""

    def __init__(self) -> None:
        self.visited: list[str] = []
        self._result: AuthorizationCodeResult | None = None

    async def redirect_handler(self, authorization_url: str) -> None:
        """Open the authorization URL; the provider approves and redirects to the client's `redirect_uri`."""
        self.visited.append(authorization_url)
        async with httpx2.AsyncClient(timeout=10.0) as http:
            response = await http.get(authorization_url)
        if response.status_code != 302:
            raise OAuthProviderError("authorization_failed", f"{response.status_code}: {response.text}")
        query = parse_qs(urlparse(response.headers["location"]).query)
        if "error" in query:
            raise OAuthProviderError(query["error"][0], query.get("error_description", [""])[0])
        self._result = AuthorizationCodeResult(code=query["code"][0], state=query.get("state", [None])[0])

    async def callback_handler(self) -> AuthorizationCodeResult:
        """The code and state the last redirect carried."""
        if self._result is None:
            raise OAuthProviderError("no_redirect", "callback_handler ran before redirect_handler")
        result, self._result = self._result, None
        return result


async def _serve_forever(port: int, redirect_uri: str) -> None:
    """Serve on `port` with one client registered for `redirect_uri`; print its settings for the sign-in example."""
    async with OAuthProvider(port=port) as provider:
        client = provider.add_client(redirect_uris=[redirect_uri], grant_types=("authorization_code", "refresh_token"))
        print(f"export OAUTH_AUTHORIZE_URL={provider.authorization_endpoint}")
        print(f"export OAUTH_TOKEN_URL={provider.token_endpoint}")
        print(f"export OAUTH_CLIENT_ID={client.client_id}")
        print(f"export OAUTH_CLIENT_SECRET={client.client_secret}")
        print("# serving until Ctrl-C; /authorize approves every request as 'alice'", flush=True)
        await anyio.sleep_forever()


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="A loopback OAuth provider that approves every sign-in (tests only).")
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--redirect-uri", required=True, help="the callback of the server that signs users in")
    options = parser.parse_args()
    anyio.run(_serve_forever, options.port, options.redirect_uri)
