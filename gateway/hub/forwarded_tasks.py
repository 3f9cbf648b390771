"""`ForwardedTasks`: an upstream's tasks (SEP-2663) handed to the gateway's clients, and their `tasks/*` routed back.

A modern client that declared the Tasks extension gets an upstream's `CreateTaskResult` as the upstream sent it,
only its `taskId` replaced by one the gateway hands out: it names the upstream (its config key) and the upstream's
own task id, and carries a MAC over both and the calling principal, made with the gateway's secret. An anonymous
sessionless call's task also names that call's session: the upstream session it borrowed is known upstream by a key
derived from it (`WarmSessions`), and the upstream's task belongs to that session, so its `tasks/*` must go there
(a lasting downstream session's go on the caller's own, which the upstream task belongs to). The server's
`tasks/get`, `tasks/update` and `tasks/cancel` for an id it did not start reach `answer` (`ServedTasks.foreign`),
which checks the MAC against the caller's principal, sends the request to that upstream on the caller's upstream
session, and returns the upstream's answer as sent, only its `taskId` put back. Another principal (or an id
altered in any way) is told the task does not exist, as for an id never issued.

The secret is derived from the sealing key (`$ADK_MCP_GATEWAY_SEALING_KEY`, `gateway.server.sealing`) when one is
set, so that every replica sharing it answers for an id any of them handed out, and a restart keeps them good (each
key of the ring is accepted, the first makes new ids); without one it is this process's own, and an id lasts as long
as the gateway that handed it out.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import logging
import secrets
from collections.abc import Callable, Sequence
from typing import Any, Final

from mcp.server.context import ServerRequestContext

from gateway.client import McpToolset
from gateway.server.identity import CallIdentity, identify
from gateway.server.sealing import sealing_keys
from gateway.server.tasks import TaskParams
from gateway.tasks.wire import CreateTaskResult, UpdateTaskParams
from gateway.tools import ReadonlyContext

__all__ = ["FORWARDED_PREFIX", "ForwardedTasks"]

logger = logging.getLogger(__name__)

FORWARDED_PREFIX: Final = "upstream-task."
"""How a task id the gateway handed out for an upstream's task begins."""
_MAC_CHARS: Final = 32


def _derived(sealing_key: str) -> bytes:
    """The forwarded tasks' secret for one sealing key (never the key itself, which seals other things)."""
    return hmac.new(sealing_key.encode(), b"adk-mcp-gateway forwarded task ids", hashlib.sha256).digest()


class ForwardedTasks:
    """Hands out the upstreams' tasks and answers for them (a `gateway.server.tasks.ForeignTasks`)."""

    def __init__(self, upstreams: Callable[[], Sequence[McpToolset]]) -> None:
        self._upstreams = upstreams
        ring = sealing_keys()
        self._secrets = [_derived(key) for key in ring] if ring else [secrets.token_bytes(32)]

    def hand_out(self, upstream: McpToolset, task: CreateTaskResult, identity: CallIdentity) -> dict[str, Any]:
        """The `CreateTaskResult` a client gets for `task` (wire form, as the upstream sent it but for its id)."""
        key = self._key_of(upstream)
        session = identity.session_key if identity.call_scoped else ""
        return {**task.wire(), "taskId": self._forwarded_id(key, session, identity.principal, task.task_id)}

    async def answer(
        self, ctx: ServerRequestContext[Any, Any], method: str, params: TaskParams
    ) -> dict[str, Any] | None:
        """The upstream's answer to `method` for a task this gateway handed out to the caller; None otherwise."""
        decoded = self._decode(params.task_id)
        if decoded is None:
            return None
        key, session, mac, upstream_id = decoded
        identity = identify(ctx)
        expected = (self._mac(key, session, identity.principal, upstream_id, secret) for secret in self._secrets)
        if not any(hmac.compare_digest(mac, candidate) for candidate in expected):
            logger.warning("%s of forwarded task %s refused: it was handed to another principal", method, key)
            return None
        upstream = next((item for item in self._upstreams() if self._key_of(item) == key), None)
        if upstream is None:
            return None  # the upstream left the config: its tasks are gone with it
        responses = params.input_responses if isinstance(params, UpdateTaskParams) else None
        context = ReadonlyContext(user_id=identity.principal, session_id=session or identity.session_key)
        try:
            answer = await upstream.send_task_request(method, upstream_id, context, input_responses=responses)
        finally:
            if session:
                # The creating call's borrowed session goes back, as at the end of that call.
                await upstream.release(context)
        if "taskId" in answer:
            answer["taskId"] = params.task_id
        return answer

    def _key_of(self, upstream: McpToolset) -> str:
        key = getattr(upstream, "key", None)
        if isinstance(key, str):
            return key
        return f"upstream-{next(i for i, item in enumerate(self._upstreams()) if item is upstream)}"

    def _mac(self, key: str, session: str, principal: str, upstream_id: str, secret: bytes | None = None) -> str:
        message = "\0".join((key, session, principal, upstream_id)).encode()
        return hmac.new(secret or self._secrets[0], message, hashlib.sha256).hexdigest()[:_MAC_CHARS]

    def _forwarded_id(self, key: str, session: str, principal: str, upstream_id: str) -> str:
        mac = self._mac(key, session, principal, upstream_id)
        return f"{FORWARDED_PREFIX}{_encode(key)}.{_encode(session)}.{mac}.{upstream_id}"

    @staticmethod
    def _decode(task_id: str) -> tuple[str, str, str, str] | None:
        if not task_id.startswith(FORWARDED_PREFIX):
            return None
        parts = task_id.removeprefix(FORWARDED_PREFIX).split(".", 3)
        if len(parts) != 4 or len(parts[2]) != _MAC_CHARS or not parts[3]:
            return None
        encoded_key, encoded_session, mac, upstream_id = parts
        try:
            key = base64.urlsafe_b64decode(encoded_key + "=" * (-len(encoded_key) % 4)).decode()
            session = base64.urlsafe_b64decode(encoded_session + "=" * (-len(encoded_session) % 4)).decode()
        except (binascii.Error, UnicodeDecodeError):
            return None
        return key, session, mac, upstream_id


def _encode(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")
