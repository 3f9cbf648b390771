"""The gateway's JSON config: a superset of Claude Desktop's `mcpServers`, validated with errors that name the key.

    {
      "mcpServers": {
        "time":  {"command": "uvx", "args": ["mcp-server-time"]},
        "docs":  {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"},
                  "prefix": "", "allowTools": ["search"], "confirm": "destructive"}
      },
      "tools": ["my_package.tools:all_tools", "local_tools.py"]
    }

`${VAR}` in any string is replaced by the environment variable (a missing one is an error naming it and the
key); `$${` writes a literal `${`. Relative paths in `tools` and `cwd` are relative to the config file.

A real `claude_desktop_config.json` holds keys of Claude Desktop's own (`globalShortcut`, `preferences`, ...): an
unknown top-level key is ignored, with one log notice naming them all, unless it is a near-miss of one of ours
(`mcpServer`, `tool`), which stays an error suggesting the key. Unknown keys inside our sections are always errors.
"""

from __future__ import annotations

import difflib
import json
import logging
import os
import re
from pathlib import Path
from typing import Any, Final, Literal, cast, get_args

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from gateway.artifacts.codec import DEFAULT_MAX_ARTIFACT_BYTES
from gateway.client.connection import (
    ConnectionParams,
    SseConnectionParams,
    StdioConnectionParams,
    StreamableHTTPConnectionParams,
)
from gateway.config.access import AuthConfig, IntrospectionConfig, PolicyConfig, RateLimitConfig
from gateway.config.upstream_auth import UpstreamAuth
from gateway.errors import ConfigError
from gateway.server.search.tool_search import ToolSearchSettings

__all__ = ["MIN_RESULT_BYTES", "GatewayConfig", "ToolSearchConfig", "UpstreamConfig", "load_config"]

# Named for the package: operators filter config notices by `gateway.config`, whichever module reads the file.
logger = logging.getLogger("gateway.config")

_VARIABLE = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
MIN_RESULT_BYTES: Final = 1024
"""The smallest `maxResultBytes`: room for the truncation note and the link to the whole result."""
_MODEL_CONFIG = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True)


class UpstreamConfig(BaseModel):
    """One upstream MCP server: a command (stdio) or a URL (streamable HTTP or SSE), plus gateway options."""

    model_config = _MODEL_CONFIG

    command: str | None = None
    args: list[str] = Field(default_factory=list[str])
    env: dict[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    transport: Literal["stdio", "http", "sse", "streamable-http", "streamableHttp"] | None = Field(
        default=None, validation_alias="type"
    )
    headers: dict[str, str] | None = None
    auth: UpstreamAuth | None = None
    """How the gateway authenticates to this (HTTP) upstream beyond `headers` (`gateway.config.upstream_auth`)."""
    prefix: str | None = None
    """Tool-name prefix: `{prefix}_{name}`. Default: the server's key; `""` passes names through unchanged."""
    allow_tools: list[str] | None = None
    deny_tools: list[str] = Field(default_factory=list[str])
    connect_timeout: PositiveFloat = 30.0
    call_timeout: PositiveFloat | None = 300.0
    list_timeout: PositiveFloat = 5.0
    """Seconds a tool listing of this upstream may take (connecting included); past it the upstream is left out of
    that listing, reported `failing` in `/healthz`, and backed off."""
    session_policy: Literal["isolated", "shared"] = "isolated"
    """`isolated`: one upstream session per downstream session. `shared`: one for all (stateless upstreams)."""
    session_idle_timeout: PositiveFloat | None = 1800.0
    """Seconds an isolated upstream session may sit without a request before it ends (and its process with it);
    `null` keeps it until its downstream session ends. Sessions named only by a `_meta` session key end no
    other way."""
    max_sessions: int = Field(default=32, ge=1)
    """Isolated upstream sessions (stdio: processes) open at once; past it the least recently used idle one ends,
    and if none is idle the request is refused with a JSON-RPC error naming `maxSessions`."""
    max_sessions_per_client: int = Field(default=8, ge=1)
    """The same, per client: its authenticated principal, else its address (`docs/gateway/sessions.md`)."""
    warm_sessions: int = Field(default=2, ge=0)
    """Upstream sessions kept open for anonymous sessionless calls, each lent to one call at a time."""
    protocol_version: Literal["2025-11-25", "2026-07-28"] | None = None
    """The protocol era to speak with this upstream; default: chosen per session (`gateway.hub.era`)."""
    pin_tools: bool | None = None
    """Withhold a tool whose definition changed since it was first seen until it is approved (`pins approve`);
    default: the top-level `pinTools`."""
    confirm: bool | list[str] | Literal["destructive"] = False
    """Ask the downstream user before forwarding: every call, the listed tools, or tools marked destructive."""
    max_result_bytes: int | None = Field(default=None, ge=MIN_RESULT_BYTES)
    """A tool result larger than this (its JSON, in bytes) reaches the client truncated, with a `resource_link` to
    the whole result kept by the gateway (`gateway.hub.kept_results`); default: the config's `maxResultBytes`."""
    disabled: bool = False

    @model_validator(mode="before")
    @classmethod
    def _accept_transport_spellings(cls, data: object) -> object:
        if not isinstance(data, dict):
            return data
        fields = cast("dict[str, Any]", data)
        if "transport" in fields and "type" not in fields:
            return {("type" if key == "transport" else key): value for key, value in fields.items()}
        return fields

    @model_validator(mode="after")
    def _one_way_to_connect(self) -> UpstreamConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either 'command' (a stdio server) or 'url' (a remote server), not both or neither")
        if self.command is not None and self.transport not in (None, "stdio"):
            raise ValueError(f"'type' is {self.transport!r} but 'command' starts a stdio server; remove 'type'")
        if self.url is not None and self.transport == "stdio":
            raise ValueError("'type' is 'stdio' but 'url' names a remote server; use 'http' or 'sse'")
        if self.auth is not None and self.url is None:
            raise ValueError("'auth' applies to remote servers ('url'); give a stdio server its secrets in 'env'")
        return self

    def connection(self, base: Path, name: str | None = None) -> ConnectionParams:
        """The client connection parameters for this upstream (relative `cwd` resolved against `base`); a stdio
        child's stderr is logged under `name` (its config key)."""
        timeouts: dict[str, Any] = {"connect_timeout": self.connect_timeout, "call_timeout": self.call_timeout}
        if self.command is not None:
            cwd = str((base / self.cwd).resolve()) if self.cwd else None
            return StdioConnectionParams(
                command=self.command, args=self.args, env=self.env, cwd=cwd, log_name=name, **timeouts
            )
        assert self.url is not None
        if self.transport == "sse" or (self.transport is None and self.url.rstrip("/").endswith("/sse")):
            return SseConnectionParams(url=self.url, headers=self.headers, **timeouts)
        return StreamableHTTPConnectionParams(url=self.url, headers=self.headers, **timeouts)


class ToolSearchConfig(BaseModel):
    """`toolSearch`: when `tools/list` offers `search_tools` and `call_tool` instead of every tool.

    `"toolSearch": "auto"` is short for `{"mode": "auto"}`.
    """

    model_config = _MODEL_CONFIG

    mode: Literal["off", "auto", "on"] = "auto"
    """`auto`: when the caller may use more than `threshold` tools."""
    threshold: int = Field(default=ToolSearchSettings.threshold, ge=0)
    always_visible: list[str] = Field(default_factory=list[str])
    """Globs of tool names listed next to the search tools."""

    @model_validator(mode="before")
    @classmethod
    def _accept_a_mode_alone(cls, data: object) -> object:
        return {"mode": data} if isinstance(data, str) else data

    def settings(self) -> ToolSearchSettings:
        """The settings `ToolServer(tool_search=...)` takes."""
        return ToolSearchSettings(self.mode, self.threshold, tuple(self.always_visible))


class GatewayConfig(BaseModel):
    """The whole config file."""

    model_config = _MODEL_CONFIG

    mcp_servers: dict[str, UpstreamConfig] = Field(default_factory=dict[str, UpstreamConfig])
    tools: list[str] = Field(default_factory=list[str])
    """Local Python tool references (`module:attr`, `path/to/file.py`)."""
    name: str = "adk-mcp-gateway"
    state: str | None = None
    """Where session, `user:` and `app:` state lives: a SQLite file or a `redis://` URL (`--state` and
    `$ADK_MCP_GATEWAY_STATE` win over it)."""
    memory: str | None = None
    """Where the users' long-term memory lives (`tool_context.search_memory`, google-adk's `load_memory`): a SQLite
    file, or `module:attr` / `path/to/file.py:attr` naming a memory service (ours, or google-adk's
    `BaseMemoryService`); default: the state's SQLite file (`gateway.config.memory_choice`). Read at start."""
    sealing_key: str | None = None
    """The secret(s) sealing modern clients' `requestState`, shared by every replica (`gateway.server.sealing`);
    write it as `${VAR}` rather than in the file."""
    auth: AuthConfig | None = None
    """Serve HTTP as an OAuth 2.1 resource server (`gateway.config.access`)."""
    policies: list[PolicyConfig] = Field(default_factory=list[PolicyConfig])
    """Which principals may use which tools, resources and prompts, and how often; none: everything allowed."""
    max_result_bytes: int | None = Field(default=None, ge=MIN_RESULT_BYTES)
    """`maxResultBytes` of every upstream that sets none; default: results are never cut."""
    pin_tools: bool = False
    """`pinTools` for every upstream that does not set its own."""
    tool_search: ToolSearchConfig | None = None
    """Offer `search_tools` and `call_tool` instead of a large catalog (`gateway.server.search.tool_search`)."""
    max_listen_streams_per_client: int | None = Field(default=None, ge=1)
    """Open `subscriptions/listen` streams one principal (one address, when anonymous) may have; default 32
    (`gateway.hub.listen_streams`). Read at start, not on reload."""
    max_artifact_bytes: int = Field(default=DEFAULT_MAX_ARTIFACT_BYTES, ge=1)
    """The largest artifact a tool may save (`tool_context.save_artifact`), in bytes; default 10 MiB. A larger one
    fails the call with an error naming `maxArtifactBytes`. Read at start."""
    max_held_calls: int = Field(default=256, ge=1)
    """Upstream calls held open at once waiting for a modern client's next round (`gateway.hub.held_calls`);
    one more is refused with a JSON-RPC error naming `maxHeldCalls`. Read at start."""
    max_held_calls_per_client: int = Field(default=32, ge=1)
    """The same, per client (its principal, else its address): `maxHeldCallsPerClient`. Read at start."""
    path: Path = Field(default=Path("."), exclude=True)
    """Where the config was read from (not a key of the file)."""
    ignored_keys: tuple[str, ...] = Field(default=(), exclude=True)
    """Top-level keys of the file that are not ours and were ignored (Claude Desktop's own, say), sorted."""

    @property
    def base(self) -> Path:
        """The directory relative paths are resolved against."""
        return self.path.parent

    def pins_tools(self, key: str) -> bool:
        """Whether the tools of upstream `key` are pinned (its `pinTools`, else the top-level one)."""
        own = self.mcp_servers[key].pin_tools
        return self.pin_tools if own is None else own

    def enabled_servers(self) -> dict[str, UpstreamConfig]:
        """The upstreams that are not `disabled`."""
        return {name: server for name, server in self.mcp_servers.items() if not server.disabled}


def _interpolate(value: Any, where: str) -> Any:
    if isinstance(value, str):

        def substitute(match: re.Match[str]) -> str:
            if match.group(0) == "$${":
                return "${"
            name = match.group(1)
            if name not in os.environ:
                raise ConfigError(
                    f"{where}: the environment variable {name} is not set. Set it (export {name}=...) or remove "
                    f"${{{name}}} from the config."
                )
            return os.environ[name]

        return _VARIABLE.sub(substitute, value)
    if isinstance(value, dict):
        items = cast("dict[str, Any]", value).items()
        return {key: _interpolate(item, f"{where}.{key}") for key, item in items}
    if isinstance(value, list):
        return [_interpolate(item, f"{where}[{index}]") for index, item in enumerate(cast("list[Any]", value))]
    return value


def _location(loc: tuple[int | str, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def _known_keys(model: type[BaseModel]) -> list[str]:
    return [field.alias or name for name, field in model.model_fields.items() if not field.exclude]


_NEAR_MISS = 0.75
"""How alike (difflib ratio, case-insensitive) an unknown top-level key must be to one of ours to count as a typo."""


def _foreign_keys(data: dict[str, Any]) -> list[str]:
    """The top-level keys that are neither ours nor near-misses of ours (another program's settings), sorted."""
    known = _known_keys(GatewayConfig)
    names = {*known, *(name for name, field in GatewayConfig.model_fields.items() if not field.exclude)}
    lowered = [key.lower() for key in known]
    return sorted(
        key
        for key in data
        if key not in names and not difflib.get_close_matches(key.lower(), lowered, n=1, cutoff=_NEAR_MISS)
    )


def _auth_model(loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The model of an upstream's `auth` entry an error location points into (`...auth.<type>.<key>`)."""
    if len(loc) >= 5 and loc[2] == "auth":
        return next((model for model in get_args(get_args(UpstreamAuth)[0]) if loc[3] in _tags(model)), None)
    return None


def _tags(model: type[BaseModel]) -> tuple[str, ...]:
    return get_args(model.model_fields["type"].annotation)


def _section_model(loc: tuple[int | str, ...]) -> type[BaseModel]:
    """The model whose keys the unknown key at `loc` sits among."""
    if len(loc) == 1:
        return GatewayConfig
    if loc[0] == "auth":
        return IntrospectionConfig if len(loc) > 2 and loc[1] == "introspection" else AuthConfig
    if loc[0] == "policies":
        return RateLimitConfig if len(loc) > 3 and loc[2] == "rateLimit" else PolicyConfig
    return _auth_model(loc) or UpstreamConfig


def _explain(error: ValidationError, path: Path) -> str:
    lines = [f"{path}: invalid gateway config:"]
    for detail in error.errors(include_url=False):
        loc = tuple(part for part in detail["loc"] if not str(part).startswith("function-"))
        message = detail["msg"]
        if detail["type"] == "extra_forbidden":
            known = _known_keys(_section_model(loc))
            known = [("type" if key == "transport" else key) for key in known]
            by_lower = {key.lower(): key for key in known}
            close = difflib.get_close_matches(str(loc[-1]).lower(), list(by_lower), n=1)
            hint = f" Did you mean {by_lower[close[0]]!r}?" if close else ""
            message = f"unknown key.{hint} Known keys here: {', '.join(known)}."
        lines.append(f"  {_location(loc)}: {message}")
    return "\n".join(lines)


def load_config(path: str | os.PathLike[str]) -> GatewayConfig:
    """Read and validate a gateway config file.

    Raises:
        ConfigError: the file is missing, not JSON, or not a valid config; the message names the key and the fix.
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"Cannot read the gateway config {str(file)!r}: {exc.strerror or exc}.") from exc
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{file}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}.") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f'{file}: the config must be a JSON object with an "mcpServers" key.')
    ignored = _foreign_keys(cast("dict[str, Any]", raw))
    if ignored:
        logger.info("%s: ignoring top-level keys that are not the gateway's: %s.", file, ", ".join(ignored))
    ours = {key: value for key, value in cast("dict[str, Any]", raw).items() if key not in ignored}
    data = cast("dict[str, Any]", _interpolate(ours, "config"))
    try:
        return GatewayConfig.model_validate({**data, "path": file, "ignored_keys": tuple(ignored)})
    except ValidationError as exc:
        raise ConfigError(_explain(exc, file)) from exc
