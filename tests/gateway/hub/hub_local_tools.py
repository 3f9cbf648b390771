"""Local tools of the gateway tests (a config's `"tools": ["hub_local_tools.py"]`)."""

from __future__ import annotations


def shout(text: str) -> str:
    """Say `text` back in capitals."""
    return text.upper()


def echo(text: str) -> str:
    """A local tool named like an upstream tool (for name-conflict tests; listed only by `:echo`)."""
    return text


__all__ = ["shout"]
