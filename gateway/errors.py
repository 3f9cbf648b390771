"""The exceptions adk-mcp-gateway raises, all under one root.

    GatewayError                   root; catch this to catch everything below
    ├── ConfigError                a bad configuration value or tool reference (names the key and the fix)
    ├── ToolDefinitionError        a tool that cannot be published as given (reserved name, bad signature)
    ├── ToolNotFoundError          a call to a tool name that is not in the catalog (lists what exists)
    ├── NameConflictError          two sources publish the same tool name
    ├── ServiceNotConfiguredError  a ToolContext service (artifacts, MCP client features) is not available here
    ├── StateConflictError         state a call read was changed by another call before the call's delta landed
    ├── StateStoreUnavailableError the state store (a Redis server) cannot be reached
    ├── UpstreamUnavailableError   an upstream MCP server cannot be reached or died
    ├── UpstreamProtocolError      an upstream answered, but not as MCP allows
    ├── CredentialError            an upstream credential cannot be had (token endpoint refused, login needed)
    ├── MissingExtraError          a feature needs an optional extra that is not installed (names the pip command)
    └── AuthorizationServerError   the OAuth authorization server the gateway trusts cannot be asked (metadata,
                                   JWKS, introspection); the token in hand is then refused

`ServiceNotConfiguredError` is also a `ValueError`, because ADK raises `ValueError` in the same situations
(`'Artifact service is not initialized.'`) and ADK code catches that. `MissingExtraError` is also an
`ImportError`, which is what it replaces.
"""

from __future__ import annotations

__all__ = [
    "AuthorizationServerError",
    "ConfigError",
    "CredentialError",
    "GatewayError",
    "MissingExtraError",
    "NameConflictError",
    "ServiceNotConfiguredError",
    "StateConflictError",
    "StateStoreUnavailableError",
    "ToolDefinitionError",
    "ToolNotFoundError",
    "UpstreamProtocolError",
    "UpstreamUnavailableError",
]


class GatewayError(Exception):
    """Root of every exception this project raises on purpose."""


class ConfigError(GatewayError):
    """A configuration value or a tool reference is wrong; the message names the key and the fix."""


class ToolDefinitionError(GatewayError, TypeError):
    """A tool cannot be published as given (a reserved name, an unusable signature)."""


class ToolNotFoundError(GatewayError, LookupError):
    """A tool name that is not in the catalog; the message lists the names that exist."""


class NameConflictError(GatewayError):
    """Two tool sources publish the same name."""


class ServiceNotConfiguredError(GatewayError, ValueError):
    """A ToolContext service (artifacts, MCP client features) is not available where the tool runs."""


class StateConflictError(GatewayError):
    """State keys a call read were changed by another call before the call's delta was applied; nothing was written.

    Attributes:
        keys: the keys whose stored value no longer matches what the call read, sorted.
    """

    def __init__(self, keys: list[str]) -> None:
        self.keys = sorted(keys)
        super().__init__(
            f"State keys {', '.join(repr(k) for k in self.keys)} changed since the call read them; "
            "nothing of its delta was written. Run the call again on fresh state."
        )


class StateStoreUnavailableError(GatewayError, ConnectionError):
    """The state store cannot be reached (a Redis server down or refusing); the message names it without secrets."""


class UpstreamUnavailableError(GatewayError, ConnectionError):
    """An upstream MCP server cannot be reached, or its connection died."""


class CredentialError(GatewayError):
    """A credential for an upstream cannot be obtained: the token endpoint refused, a login is missing or expired.

    The message names the upstream (or token endpoint) and what to do (e.g. run `adk-mcp-gateway login`); it never
    contains a secret.
    """


class UpstreamProtocolError(GatewayError):
    """An upstream answered in a way MCP does not allow."""


class MissingExtraError(GatewayError, ImportError):
    """A feature needs an optional extra (`pip install "adk-mcp-gateway[adk]"`) that is not installed."""


class AuthorizationServerError(GatewayError):
    """The trusted OAuth authorization server did not answer as RFC 8414 / 7517 / 7662 describe."""
