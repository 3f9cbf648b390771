"""`ConfigReloader`: a running gateway re-reads its config (`SIGHUP`, `serve --watch`) without a restart.

A reload compares the new config with the one being served, upstream by upstream (by key):

* an upstream whose entry is unchanged keeps its toolset, so its upstream sessions (and stdio children) are not
  touched;
* a changed entry gets a new toolset; the old one takes no new calls, lets the calls already running on it
  finish (at most its `callTimeout`), then closes (its stdio children end);
* a removed entry's toolset is retired the same way; an added one starts (connecting when first needed);
* local tools are loaded again when the `tools` list or one of its `.py` files changed (modules named by import
  path are imported once per process, as Python does);
* changed `policies` apply from the next request on, to every session, open ones included (rate-limit buckets
  start afresh);
* a changed `auth` section is refused (the bearer-token check is built when the HTTP server starts): the error
  says to restart, and nothing of that config is applied.

The downstream sessions are not touched: clients stay connected and are told with `notifications/tools/list_changed`
(and the resource and prompt list changes when an upstream came or went). A config that cannot be loaded — not
JSON, an invalid key, a missing environment variable, a tool file that fails to import — is refused: the error is
logged and the gateway goes on serving the config it had. Reload requests that arrive while one runs are merged
into one more reload after it.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Self

import anyio
import anyio.abc

from gateway.adk.acceptance import as_tool
from gateway.client import McpToolset
from gateway.config import GatewayConfig, load_config
from gateway.config.access import policy_of
from gateway.errors import ConfigError
from gateway.hub.file_watch import DEFAULT_SETTLE, FileWatcher
from gateway.hub.hub import Hub
from gateway.hub.pins import PinStore
from gateway.hub.upstreams import UpstreamToolset, local_tools, tool_reference, upstream_toolset
from gateway.server.tool_server import ToolServer
from gateway.state import InMemoryStateStore
from gateway.tools import BaseTool, BaseToolset
from gateway.tools.tool_union import ToolUnion

__all__ = ["ConfigReloader", "Reload", "reloading_gateway_server"]

logger = logging.getLogger(__name__)

DRAIN_WITHOUT_CALL_TIMEOUT: Final = 300.0
"""Seconds a retired upstream's running calls may take to finish when it has no `callTimeout`."""


@dataclass(frozen=True)
class Reload:
    """What one reload changed (upstreams by config key)."""

    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    local_tools: bool = False
    """Whether the local tools were loaded again."""
    policies: bool = False
    """Whether the `policies` changed (and apply now)."""

    @property
    def upstreams(self) -> bool:
        """Whether an upstream came, changed or went."""
        return bool(self.added or self.changed or self.removed)

    def __bool__(self) -> bool:
        return self.upstreams or self.local_tools or self.policies

    def describe(self) -> str:
        """One line for the log."""
        parts = [
            f"{what} {', '.join(keys)}"
            for what, keys in (("added", self.added), ("changed", self.changed), ("removed", self.removed))
            if keys
        ]
        if self.local_tools:
            parts.append("local tools loaded again")
        if self.policies:
            parts.append("policies reloaded")
        return "; ".join(parts) or "nothing changed"


def _tool_files(config: GatewayConfig) -> list[Path]:
    """The `.py` files the config's `tools` entries name."""
    files: list[Path] = []
    for reference in config.tools:
        module = tool_reference(config, reference).partition(":")[0]
        if module.endswith(".py"):
            files.append(Path(module))
    return files


def _local_fingerprint(config: GatewayConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The `tools` entries and the content of the files they name (what loading the local tools depends on)."""
    digests: list[str] = []
    for path in _tool_files(config):
        try:
            digests.append(hashlib.sha256(path.read_bytes()).hexdigest())
        except OSError:
            digests.append("")
    return tuple(config.tools), tuple(digests)


class ConfigReloader:
    """Re-reads the config file of a running gateway and applies the difference (see the module docstring).

    Args:
        config: the config being served.
        extra_tools: tools served besides the config's (`serve --tools`, `--agent`); kept as they are.
        sighup: reload on `SIGHUP` (POSIX, main thread only).
        watch: reload when the config file or one of its tool files changes (polled, see `FileWatcher`).
        settle: seconds a changed file must stay unchanged before it is read (`watch`).
        pin_store: where upstreams with `pinTools` keep their approved tool definitions.
    """

    def __init__(
        self,
        config: GatewayConfig,
        *,
        extra_tools: Sequence[ToolUnion] = (),
        sighup: bool = True,
        watch: bool = False,
        settle: float = DEFAULT_SETTLE,
        pin_store: PinStore | None = None,
    ) -> None:
        self.config = config
        self._extra: list[BaseTool | BaseToolset] = [as_tool(item) for item in extra_tools]
        self._pins = pin_store
        self._upstreams: dict[str, UpstreamToolset] = {
            key: upstream_toolset(config, key, pin_store) for key in config.enabled_servers()
        }
        self._local = local_tools(config)
        self._local_fingerprint = _local_fingerprint(config)
        per_client = config.max_listen_streams_per_client
        self.hub = Hub(
            list(self._upstreams.values()),
            reloader=self,
            **({} if per_client is None else {"max_listen_streams_per_client": per_client}),
        )
        self.hub.held_calls.max_calls = config.max_held_calls
        self.hub.held_calls.max_per_client = config.max_held_calls_per_client
        self.server: ToolServer | None = None
        """The server to reload (set by `reloading_gateway_server`)."""
        self._sighup = sighup
        self._watch = watch
        self._settle = settle
        self._watcher: FileWatcher | None = None
        self._replaced: set[int] = set()
        """The ids of toolsets closing because their config entry changed (not because it left the config)."""
        self._lock = anyio.Lock()
        self._requested = anyio.Event()
        self._task_group: anyio.abc.TaskGroup | None = None
        self.reloads = 0
        """How many reloads changed something (for tests and the log)."""

    def items(self) -> list[ToolUnion]:
        """What the gateway serves now: the upstreams, then the config's local tools, then the extra tools."""
        return [*self._upstreams.values(), *self._local, *self._extra]

    # --- triggers -----------------------------------------------------------------------------------------------

    def request(self) -> None:
        """Ask for a reload soon (requests made while one runs are merged into one more)."""
        self._requested.set()

    async def __aenter__(self) -> Self:
        """Start listening for `SIGHUP` and watching the files, as configured."""
        async with contextlib.AsyncExitStack() as stack:
            task_group = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(task_group.cancel_scope.cancel)
            task_group.start_soon(self._serve_requests)
            if self._sighup and hasattr(signal, "SIGHUP"):
                await task_group.start(self._listen_for_sighup)
            if self._watch:
                self._watcher = FileWatcher(self._watched_paths, self._on_file_change, settle=self._settle)
                task_group.start_soon(self._watcher.run)
            self._task_group = task_group
            self._stack = stack.pop_all()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._task_group = None
        await self._stack.aclose()

    async def _listen_for_sighup(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        try:
            receiver = anyio.open_signal_receiver(signal.SIGHUP)
            signals = receiver.__enter__()
        except (RuntimeError, ValueError, NotImplementedError) as exc:
            # Not the main thread (a server embedded in another program), or a loop without signal support.
            logger.warning("Not reloading on SIGHUP here: %s", exc)
            task_status.started()
            return
        try:
            task_status.started()
            async for _ in signals:
                logger.info("SIGHUP: reloading %s", self.config.path)
                self.request()
        finally:
            receiver.__exit__(None, None, None)

    def _watched_paths(self) -> list[Path]:
        return [self.config.path, *_tool_files(self.config)]

    async def _on_file_change(self) -> None:
        changed = self._watcher.changed if self._watcher is not None else []
        named = ", ".join(str(path) for path in changed) or str(self.config.path)
        if changed == [self.config.path]:
            logger.info("%s changed: reloading", named)
        else:
            logger.info("%s changed: reloading %s", named, self.config.path)
        self.request()

    async def _serve_requests(self) -> None:
        while True:
            await self._requested.wait()
            self._requested = anyio.Event()
            try:
                await self.reload()
            except ConfigError as exc:
                logger.error("Reload refused; still serving the config loaded before. %s", exc)
            except Exception:
                logger.exception("Reload failed; still serving the config loaded before.")

    # --- the reload ---------------------------------------------------------------------------------------------

    async def reload(self) -> Reload:
        """Read the config file again and serve what it says now.

        Raises:
            ConfigError: the new config cannot be loaded or served; nothing changed.
        """
        async with self._lock:
            return await self._reload()

    async def _reload(self) -> Reload:
        server = self.server
        if server is None:
            raise ConfigError("This gateway cannot reload: its config reloader is not attached to a server.")
        new = load_config(self.config.path)
        if new.name != self.config.name:
            logger.warning(
                "The config's name changed from %r to %r; a new name takes effect on restart (it names the app "
                "state scope).",
                self.config.name,
                new.name,
            )
        if new.auth != self.config.auth:
            raise ConfigError(
                f"{new.path}: the auth section changed, which takes a restart (the bearer-token check is built when "
                "the server starts); nothing of the new config was applied. Restart the gateway to use it, or put "
                "the auth section back to reload the rest."
            )
        old_servers, new_servers = self.config.enabled_servers(), new.enabled_servers()
        upstreams: dict[str, UpstreamToolset] = {}
        added: list[str] = []
        changed: list[str] = []
        for key, entry in new_servers.items():
            current = self._upstreams.get(key)
            unchanged = old_servers.get(key) == entry and new.pins_tools(key) == self.config.pins_tools(key)
            if current is not None and unchanged and new.base == self.config.base:
                upstreams[key] = current
                continue
            upstreams[key] = upstream_toolset(new, key, self._pins)
            (changed if key in old_servers else added).append(key)
        removed = [key for key in old_servers if key not in new_servers]
        fingerprint = _local_fingerprint(new)
        reload_local = fingerprint != self._local_fingerprint
        local = local_tools(new) if reload_local else self._local
        policies = new.policies != self.config.policies
        outcome = Reload(tuple(added), tuple(changed), tuple(removed), reload_local, policies)
        if not outcome:
            self.config = new
            logger.info("Reloaded %s: nothing changed.", new.path)
            return outcome

        if outcome.upstreams or outcome.local_tools:
            before = list(self._upstreams.values())
            self.hub.replace_upstreams(list(upstreams.values()))
            try:
                self._replaced.update(id(self._upstreams[key]) for key in changed if key in self._upstreams)
                await server.replace_tools([*upstreams.values(), *local, *self._extra], retire=self._retire)
            except Exception as exc:
                self._replaced.difference_update(id(toolset) for toolset in before)
                self.hub.replace_upstreams(before)
                for key in (*added, *changed):
                    self.hub.unwire(upstreams[key])
                raise ConfigError(f"{new.path}: the new config's tools cannot be opened: {exc}") from exc
        if policies:
            server.replace_policy(policy_of(new.policies))
        self.config, self._upstreams = new, upstreams
        self._local, self._local_fingerprint = local, fingerprint
        self.reloads += 1
        # What each principal may see changes with the policies, so every list may have changed for someone.
        others = outcome.upstreams or policies
        told = await self.hub.announce(tools=True, resources=others, prompts=others)
        logger.info("Reloaded %s: %s (%d connected sessions told).", new.path, outcome.describe(), told)
        return outcome

    async def _retire(self, toolset: BaseToolset) -> None:
        """Let the calls running on a toolset that left the config finish (bounded), then stop relaying it."""
        if isinstance(toolset, McpToolset):
            timeout = toolset.connection_params.call_timeout or DRAIN_WITHOUT_CALL_TIMEOUT
            with anyio.move_on_after(timeout):
                await toolset.drained()
            if toolset.in_flight:
                logger.warning(
                    "Closing %s with %d requests still running (they fail with a clear error).",
                    getattr(toolset, "source_name", "an upstream"),
                    toolset.in_flight,
                )
            self.hub.unwire(toolset)
        reason = "its config entry changed" if id(toolset) in self._replaced else "it left the config"
        self._replaced.discard(id(toolset))
        logger.info("Closing %s: %s.", getattr(toolset, "source_name", type(toolset).__name__), reason)


def reloading_gateway_server(
    config: GatewayConfig,
    *,
    extra_tools: Sequence[ToolUnion] = (),
    sighup: bool = True,
    watch: bool = False,
    settle: float = DEFAULT_SETTLE,
    **options: Any,
) -> ToolServer:
    """The `ToolServer` for a gateway config, reloading it on `SIGHUP` and (with `watch`) when its files change.

    `options` are `ToolServer`'s keyword arguments; the returned server's `extension` is the `Hub`, whose
    `reloader` is the `ConfigReloader`. Upstreams with `pinTools` keep their pins in the `state_store`.

    Raises:
        ConfigError: a local tool reference of the config cannot be loaded.
    """
    store = options.setdefault("state_store", InMemoryStateStore())
    reloader = ConfigReloader(
        config,
        extra_tools=extra_tools,
        sighup=sighup,
        watch=watch,
        settle=settle,
        pin_store=PinStore(store, config.name),
    )
    server = reloader.hub.serving(ToolServer(reloader.items(), extension=reloader.hub, **options))
    reloader.server = server
    return server
