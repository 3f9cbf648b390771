"""Who is calling over HTTP: static bearer tokens, and the gateway as an OAuth 2.1 resource server.

Its settings (`oauth_settings`), the authorization server it trusts and its signing keys, the token verifier that
turns an access token into a principal, and the RFC 9728 protected-resource metadata.
"""
