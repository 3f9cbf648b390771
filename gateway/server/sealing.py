"""The sealing key: the secret that seals a modern (2026-07-28) call's `requestState` between its rounds.

A modern client answers a question by calling again with the sealed `requestState` it was given; whichever process
receives that round must unseal it. One process makes up its own key at start-up, so that is enough for one
process; several replicas or workers behind one endpoint must share a key, or a round that reaches another process
than the one that sealed it is refused as invalid.

The key ring comes from `$ADK_MCP_GATEWAY_SEALING_KEY`, else the config's `sealingKey`: one or more secrets of at
least 32 bytes, comma-separated, the first sealing and every one unsealing (to rotate: `new,old` everywhere, then
`new` once the state lifetime, ten minutes, has passed). Make one with `python -c "import secrets;
print(secrets.token_urlsafe(32))"`. `require_shared_key` refuses to start a deployment whose processes would not
share one.
"""

from __future__ import annotations

import os
from typing import Final

from gateway.errors import ConfigError

__all__ = ["MIN_KEY_BYTES", "SEALING_KEY_ENV", "require_shared_key", "sealing_keys"]

SEALING_KEY_ENV: Final = "ADK_MCP_GATEWAY_SEALING_KEY"
MIN_KEY_BYTES: Final = 32
_HOW: Final = (
    f'Set ${SEALING_KEY_ENV} (or the config\'s "sealingKey") to the same secret of at least {MIN_KEY_BYTES} bytes '
    'on every replica, e.g. the output of `python -c "import secrets; print(secrets.token_urlsafe(32))"`.'
)


def sealing_keys(configured: str | None = None) -> list[str] | None:
    """The key ring in force (`$ADK_MCP_GATEWAY_SEALING_KEY`, else `configured`), or None for a per-process key.

    Raises:
        ConfigError: a key is shorter than 32 bytes (the message says where it came from, never the key).
    """
    from_env = os.environ.get(SEALING_KEY_ENV)
    text, where = (from_env, f"${SEALING_KEY_ENV}") if from_env else (configured, 'the config\'s "sealingKey"')
    if not text:
        return None
    keys = [key.strip() for key in text.split(",") if key.strip()]
    for position, key in enumerate(keys, start=1):
        if len(key.encode()) < MIN_KEY_BYTES:
            raise ConfigError(
                f"Sealing key {position} in {where} is {len(key.encode())} bytes long; it must be at least "
                f"{MIN_KEY_BYTES}. {_HOW}"
            )
    return keys or None


def require_shared_key(keys: list[str] | None, *, shared_state: bool) -> None:
    """Refuse to serve HTTP on state shared across replicas (Redis) without a shared key.

    (`serve --workers N` on one machine needs none configured: the supervisor makes one for its workers.)

    Raises:
        ConfigError: `keys` is None while the state is shared across replicas.
    """
    if keys is None and shared_state:
        raise ConfigError(
            "The state store is Redis, which is for several replicas behind one endpoint; a modern client's next "
            "round may reach another replica, so every replica must seal requestState with the same key. " + _HOW
        )
