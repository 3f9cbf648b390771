"""`PendingSignIn`: one sign-in in flight, as the process that started it and any process sharing its records see it."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import anyio

from gateway.server.sign_in.oauth_tokens import TokenRequest
from gateway.tools import AuthConfig, AuthCredential, OAuth2Auth

__all__ = ["PendingSignIn"]


@dataclass(eq=False)
class PendingSignIn:
    """One sign-in in flight: what the callback needs, and how the waiting call learns the outcome."""

    state: str
    elicitation_id: str
    principal: str
    owner: tuple[str, str, str]
    """(session owner, tool name, credential key): a later round of the same call finds the same sign-in."""
    credential_key: str
    url: str
    """Where the link's page sends a browser it has bound: the provider's authorization URL, or the entry page."""
    redirect_uri: str
    code_verifier: str
    token_url: str | None
    """The OAuth2 client's token endpoint; None for a secret the user enters on the server's own page."""
    client: OAuth2Auth | None
    auth_config: AuthConfig
    expires_at: float
    """When the link expires (`time.time()`: processes compare it)."""
    link: str = ""
    """What the user is sent to (URL-mode elicitation): the gateway's own page, which binds the browser first."""
    browser: str | None = None
    """The digest of the bound browser's cookie (`gateway.server.sign_in.browser`), when no state store keeps it."""
    done: anyio.Event = field(default_factory=anyio.Event)
    credential: AuthCredential | None = None
    failure: str | None = None

    @property
    def tokens(self) -> TokenRequest | None:
        """Requests to the token endpoint as the OAuth2 client; None for a secret entered on the server's page."""
        if self.token_url is None or self.client is None:
            return None
        return TokenRequest(self.token_url, self.client)

    def record(self) -> dict[str, Any]:
        """What another process needs to complete this sign-in (`from_record`)."""
        return {
            "state": self.state,
            "elicitationId": self.elicitation_id,
            "principal": self.principal,
            "owner": list(self.owner),
            "credentialKey": self.credential_key,
            "url": self.url,
            "redirectUri": self.redirect_uri,
            "codeVerifier": self.code_verifier,
            "tokenUrl": self.token_url,
            "client": None if self.client is None else self.client.model_dump(mode="json", exclude_none=True),
            "authConfig": self.auth_config.model_dump(by_alias=True, mode="json", exclude_none=True),
            "expiresAt": self.expires_at,
            "link": self.link,
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> PendingSignIn:
        """The sign-in another process wrote (`record`)."""
        session_owner, tool_name, key = record["owner"]
        client = record["client"]
        return cls(
            state=record["state"],
            elicitation_id=record["elicitationId"],
            principal=record["principal"],
            owner=(session_owner, tool_name, key),
            credential_key=record["credentialKey"],
            url=record["url"],
            redirect_uri=record["redirectUri"],
            code_verifier=record["codeVerifier"],
            token_url=record["tokenUrl"],
            client=None if client is None else OAuth2Auth.model_validate(client),
            auth_config=AuthConfig.model_validate(record["authConfig"]),
            expires_at=record["expiresAt"],
            link=record.get("link", ""),
        )

    @property
    def provider(self) -> str:
        """The host the user signs in at (for messages)."""
        return urlparse(self.url).netloc

    @property
    def valid(self) -> bool:
        """Whether the sign-in can still complete (not expired, not completed or failed)."""
        return self.expires_at >= time.time() and not self.done.is_set()
