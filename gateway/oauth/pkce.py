"""PKCE (RFC 7636): the verifier a sign-in keeps, and the S256 challenge its authorization URL carries."""

from __future__ import annotations

import base64
import hashlib
import secrets

__all__ = ["challenge_parameters", "new_code_verifier", "pkce_challenge"]


def new_code_verifier() -> str:
    """A fresh, unguessable code verifier (64 characters, within the 43 to 128 RFC 7636 §4.1 allows)."""
    return secrets.token_urlsafe(48)


def pkce_challenge(verifier: str) -> str:
    """The S256 `code_challenge` of a PKCE verifier."""
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")


def challenge_parameters(verifier: str) -> dict[str, str]:
    """What an authorization URL carries for a PKCE verifier: its S256 challenge, and the method."""
    return {"code_challenge": pkce_challenge(verifier), "code_challenge_method": "S256"}
