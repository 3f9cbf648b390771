"""Without the `adk` extra everything else works, and the ADK entry points say which extra to install."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.support.paths import ROOT

# Makes google-adk unimportable in the child, as on a machine where the extra is not installed.
WITHOUT_ADK = textwrap.dedent(
    """
    import importlib.abc, sys

    class NoAdk(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "google.adk" or name.startswith("google.adk."):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, NoAdk())
    """
)


def _run(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_ADK + textwrap.dedent(code), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_without_google_adk_our_tools_are_served_and_from_adk_names_the_extra() -> None:
    done = _run(
        """
        import anyio
        from mcp import Client
        from gateway.server import ToolServer
        from gateway.adk import from_adk
        from gateway.errors import MissingExtraError

        def add(a: int, b: int) -> int:
            return a + b

        async def main():
            async with ToolServer([add]) as server, Client(server.server) as client:
                result = await client.call_tool("add", {"a": 2, "b": 3})
                print("served", result.structured_content)

        anyio.run(main)
        try:
            from_adk(object())
        except MissingExtraError as exc:
            print("refused:", exc)
        """
    )
    assert done.returncode == 0, done.stderr
    assert "served {'result': 5}" in done.stdout
    assert "refused: from_adk() needs google-adk" in done.stdout
    assert 'pip install "adk-mcp-gateway[adk]"' in done.stdout


def test_without_google_adk_serve_agent_exits_with_usage_naming_the_extra() -> None:
    done = _run(
        """
        import sys
        from gateway.cli import main
        sys.exit(main(["serve", "--agent", "my_agent:root_agent"]))
        """
    )
    assert done.returncode == 2, done.stderr
    assert "Serving the agent 'my_agent:root_agent' needs google-adk" in done.stderr
    assert 'pip install "adk-mcp-gateway[adk]"' in done.stderr
