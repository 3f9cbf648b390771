"""OAuth 2.0 pieces that both the client side (outbound credentials) and the server side (sign-ins) use.

Neutral ground: this package imports neither `gateway.client`, `gateway.hub` nor `gateway.server`
(tests/test_layering.py), so the server can use it without reaching the client.
"""

from gateway.oauth.client_authentication import ClientAuthMethod, authenticate_client

__all__ = ["ClientAuthMethod", "authenticate_client"]
