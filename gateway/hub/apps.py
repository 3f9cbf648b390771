"""MCP Apps (`io.modelcontextprotocol/ui`, SEP-1865) across the hop: an upstream's apps work through the gateway.

An app is a `ui://` resource (HTML the host renders in a sandbox) that an upstream's tools name in
`_meta.ui.resourceUri`. Three things keep it working behind the gateway:

- **Its URI stays a `ui://` URI.** Hosts recognise apps by the scheme, so an upstream's `ui://clock/app.html`
  becomes `ui://<prefix>/clock/app.html` (other URIs become `<prefix>+<uri>`, see `gateway.hub.passthrough`);
  a read of it reaches the upstream as `ui://clock/app.html`.
- **What names it is rewritten alike**: `_meta.ui.resourceUri` (and the deprecated flat `_meta["ui/resourceUri"]`)
  on the tools listed and on call results, and resource links and embedded resources in results.
- **The app's own calls reach its tools.** An app calls the tools of the server it came from by the names that
  server gave them (`tools/call` through its host, which sends it here). `AppCalls` makes such a call, when its
  name is not one the gateway publishes, a call of the upstream tool of that name, if exactly one upstream that
  serves apps (one of its tools names an app) has one the app may call (`_meta.ui.visibility` absent or with
  `"app"`). When several do, the call is refused, naming the published names to use. The call then runs as a call of
  the published name would: access policies, rate limits and confirmation apply to that name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Final, cast

from mcp import MCPError, types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

from gateway.client import McpTool
from gateway.errors import GatewayError, ToolNotFoundError
from gateway.hub.era import DownstreamEras
from gateway.server.catalog import CatalogEntry, CatalogView
from gateway.server.identity import identify
from gateway.server.tool_server import ToolServer
from gateway.tools import ReadonlyContext

__all__ = ["APPS_EXTENSION", "UI_SCHEME", "AppCalls", "namespaced_meta", "namespaced_uri", "upstream_uri"]

APPS_EXTENSION: Final = "io.modelcontextprotocol/ui"
"""The MCP Apps extension's identifier (`mcp.server.apps.EXTENSION_ID`)."""
UI_SCHEME: Final = "ui://"
_FLAT_KEY: Final = "ui/resourceUri"
"""The flat form of `_meta.ui.resourceUri` that SEP-1865 deprecates (still sent by some servers)."""


def namespaced_uri(prefix: str | None, uri: str) -> str:
    """An upstream's resource URI as the gateway's clients know it: `ui://<prefix>/<rest>` for an app, else
    `<prefix>+<uri>`; unchanged without a prefix."""
    if not prefix:
        return uri
    if uri.startswith(UI_SCHEME):
        return f"{UI_SCHEME}{prefix}/{uri[len(UI_SCHEME) :]}"
    return f"{prefix}+{uri}"


def upstream_uri(prefix: str, uri: str) -> str | None:
    """The upstream's own URI for a URI the gateway published under `prefix` (None: not under it)."""
    app_root = f"{UI_SCHEME}{prefix}/"
    if uri.startswith(app_root):
        return UI_SCHEME + uri[len(app_root) :]
    if uri.startswith(f"{prefix}+"):
        return uri[len(prefix) + 1 :]
    return None


def namespaced_meta(prefix: str | None, meta: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A tool's or result's `_meta` with the app it names (`ui.resourceUri`, `ui/resourceUri`) namespaced; the same
    object when it names none (or there is no prefix)."""
    if not prefix or not meta:
        return cast("dict[str, Any] | None", meta)
    ui: Any = meta.get("ui")
    flat: Any = meta.get(_FLAT_KEY)
    named = isinstance(ui, dict) and isinstance(cast("dict[str, Any]", ui).get("resourceUri"), str)
    if not named and not isinstance(flat, str):
        return cast("dict[str, Any]", meta)
    rewritten = dict(meta)
    if named:
        fields = cast("dict[str, Any]", ui)
        rewritten["ui"] = {**fields, "resourceUri": namespaced_uri(prefix, fields["resourceUri"])}
    if isinstance(flat, str):
        rewritten[_FLAT_KEY] = namespaced_uri(prefix, flat)
    return rewritten


def _app_of(tool: types.Tool) -> Mapping[str, Any] | None:
    """A tool's `_meta.ui`, when it has one."""
    ui: Any = (tool.meta or {}).get("ui")
    return cast("Mapping[str, Any]", ui) if isinstance(ui, dict) else None


def _app_may_call(tool: types.Tool) -> bool:
    ui = _app_of(tool)
    visibility: Any = ui.get("visibility") if ui is not None else None
    return not isinstance(visibility, list) or "app" in cast("list[Any]", visibility)


class AppCalls:
    """Server middleware: an app's `tools/call` by its upstream's tool name becomes a call of the published name.

    Outermost in the server's pipeline, so everything after it (access policies, rate limits, the request log) sees
    the published name. A name the gateway publishes is never rewritten.
    """

    def __init__(self, server: ToolServer, eras: DownstreamEras | None = None) -> None:
        self._server = server
        self._eras = eras

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        params = ctx.params
        name = params.get("name") if ctx.method == "tools/call" and params is not None else None
        if not isinstance(name, str) or params is None:
            return await call_next(ctx)
        # A later round spends its round id as it starts, so it is never sent twice: it is looked up first.
        if self._server.catalog.has_published(name) and params.get("requestState") is None:
            try:
                # The usual call names a published tool: it runs as sent, looked up once, by the call itself.
                return await call_next(ctx)
            except MCPError as exc:
                # Not published to this caller after all (or refused by the policies): -32602, before anything ran.
                if exc.error.code != types.INVALID_PARAMS:
                    raise
                published = await self._published(ctx, name)
                if published is None:
                    raise
        else:
            # A name no source has published (an app's upstream tool name, a typo): looked up before it runs, so
            # the layers after this one see the call once, under the name it runs as.
            published = await self._published(ctx, name)
            if published is None:
                return await call_next(ctx)
        return await call_next(dataclasses.replace(ctx, params={**params, "name": published}))

    async def _published(self, ctx: ServerRequestContext[Any, Any], name: str) -> str | None:
        """The published name of the upstream tool an app calls by `name`; None when `name` is published itself or
        no app's tool has it.

        Raises:
            MCPError: -32602, several upstreams that serve apps have a tool of that name.
        """
        identity = identify(ctx)
        if self._eras is not None:
            # The lookup below may open this caller's isolated upstream session: told first what its client speaks
            # and declared, it opens the session the call then uses, not one beside it.
            self._eras.seen(identity.session_owner, ctx.protocol_version, ctx.session.client_capabilities)
        readonly = ReadonlyContext(
            app_name=self._server.name, user_id=identity.principal, session_id=identity.session_key
        )
        catalog = self._server.catalog
        try:
            await catalog.find(name, readonly)
        except ToolNotFoundError:
            return _published_for_app(await catalog.view(readonly), name)
        except (GatewayError, MCPError):
            pass  # the call itself reports why (an upstream that cannot be reached now)
        return None


def _published_for_app(view: CatalogView, name: str) -> str | None:
    """The published name of the one upstream tool an app may be calling by its upstream name `name`.

    Raises:
        MCPError: -32602, several upstreams that serve apps have a tool of that name.
    """
    serving_apps: set[int] = set()
    candidates: list[tuple[str, CatalogEntry]] = []
    for published, entry in view.entries.items():
        tool = entry.tool
        if not isinstance(tool, McpTool):
            continue
        if _app_of(tool.raw_mcp_tool) is not None:
            serving_apps.add(id(tool.toolset))
        if tool.raw_mcp_tool.name == name and _app_may_call(tool.raw_mcp_tool):
            candidates.append((published, entry))
    found = [published for published, entry in candidates if id(cast("McpTool", entry.tool).toolset) in serving_apps]
    if len(found) > 1:
        raise MCPError(
            code=types.INVALID_PARAMS,
            message=f"Unknown tool {name!r}: several upstreams that serve apps have a tool of that name; "
            f"call it by its published name ({', '.join(sorted(found))}).",
            data={"candidates": sorted(found)},
        )
    return found[0] if found else None
