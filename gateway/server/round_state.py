"""`RoundState`: what one round of a modern (2026-07-28) call hands to the next through its `requestState`.

A modern client is asked a question by ending the call with an `InputRequiredResult`; it answers by calling again
with `inputResponses` and the `requestState` it was given. The SDK's `RequestStateBoundary` seals that state
(AES-GCM under the server's key) and binds it to the method, the tool name, a digest of the arguments, the server
(audience) and the authenticated principal, and to a ten-minute lifetime. What it cannot know is carried here:

* the session the call belongs to: a round answered from another session is refused;
* the questions asked in the round that just ended, each with a digest of its request: an answer counts only under
  the key of a question asked there, and only for that very question;
* the answers accepted in earlier rounds (a local tool runs again from the start and gets them in order);
* the held upstream call the rounds continue, if any (`gateway.hub.held_calls`);
* for a call relayed to a modern upstream round by round (`gateway.hub.hub`), that it is one, and the upstream's
  own `requestState` (sealed again here, so the client sees only the gateway's);
* a random id for the round, accepted once by every process on the state store (`gateway.server.spent_rounds`):
  a round answered once cannot be sent again to run the confirmed call a second time.

`inputResponses` sent unasked (on a first round, under another key) are ignored: nothing a client sends before it is
asked can stand in for the user's answer.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, cast

from mcp import MCPError, types

from gateway.server.identity import CallIdentity

__all__ = ["RoundState", "question_digest"]

_VERSION: Final = 2


def question_digest(request: types.ElicitRequest | types.CreateMessageRequest) -> str:
    """A short digest of a question, so that an answer is matched to the question it was given for."""
    wire = request.model_dump(by_alias=True, mode="json", exclude_none=True)
    return hashlib.sha256(json.dumps(wire, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:32]


def _invalid(reason: str) -> MCPError:
    return MCPError(code=types.INVALID_PARAMS, message=f"Invalid requestState: {reason}; call the tool again.")


@dataclass(frozen=True)
class RoundState:
    """The plaintext of one call's `requestState` (sealed and bound by the SDK on the way out and in)."""

    session: CallIdentity | None = None
    """The principal and session the call belongs to; None on a first round."""
    asked: Mapping[str, str] = field(default_factory=dict[str, str])
    """The questions the round that ended asked: key -> question digest."""
    answers: Mapping[str, tuple[str, Any]] = field(default_factory=dict[str, tuple[str, Any]])
    """Answers accepted so far: key -> (question digest, the answer as the client sent it)."""
    held: str | None = None
    """The held call these rounds continue."""
    relayed: bool = False
    """Whether the rounds are relayed to a modern upstream (its questions, under its keys, go to the client)."""
    upstream: str | None = None
    """The upstream's `requestState` from the round that ended (relayed rounds)."""
    round_id: str | None = None
    """The id of the round that ended with this state (a fresh one is made by `dump`)."""

    @classmethod
    def parse(cls, plaintext: str | None) -> RoundState:
        """The state a round carries (already unsealed and verified by the SDK); empty on a first round.

        Raises:
            MCPError: the state was not made by this version of the server (-32602, the client calls again).
        """
        if not plaintext:
            return cls()
        try:
            loaded: Any = json.loads(plaintext)
        except ValueError as exc:
            raise _invalid("not JSON") from exc
        if not isinstance(loaded, dict) or cast("dict[str, Any]", loaded).get("v") != _VERSION:
            raise _invalid("made by another version of this server")
        state = cast("dict[str, Any]", loaded)
        session, held, round_id = state.get("session"), state.get("held"), state.get("round")
        upstream = state.get("upstream")
        identity = CallIdentity(*cast("list[str]", session)) if isinstance(session, list) else None
        asked = cast("dict[str, str]", state.get("asked") or {})
        answers = {
            key: (str(pair[0]), pair[1])
            for key, pair in cast("dict[str, list[Any]]", state.get("answers") or {}).items()
        }
        return cls(
            session=identity,
            asked=dict(asked),
            answers=answers,
            held=held if isinstance(held, str) else None,
            relayed=state.get("relayed") is True,
            upstream=upstream if isinstance(upstream, str) else None,
            round_id=round_id if isinstance(round_id, str) else None,
        )

    def dump(self) -> str:
        """The plaintext to seal into the next `requestState`."""
        state: dict[str, Any] = {
            "v": _VERSION,
            "round": secrets.token_hex(16),
            "session": None if self.session is None else [self.session.principal, self.session.session_key],
            "asked": dict(self.asked),
            "answers": {key: list(pair) for key, pair in self.answers.items()},
        }
        if self.held is not None:
            state["held"] = self.held
        if self.relayed:
            state["relayed"] = True
        if self.upstream is not None:
            state["upstream"] = self.upstream
        return json.dumps(state, separators=(",", ":"))

    def check_session(self, identity: CallIdentity) -> None:
        """Refuse a round sent from a session other than the one the call began in.

        Raises:
            MCPError: -32602; the call belongs to another session.
        """
        if self.session is not None and self.session != identity:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message="This requestState belongs to a call of another session; call the tool again in this one.",
            )

    def accepted(self, responses: Mapping[str, types.InputResponse] | None) -> dict[str, tuple[str, Any]]:
        """The earlier answers plus this round's answers to the questions the last round asked (others ignored)."""
        accepted = dict(self.answers)
        for key, response in (responses or {}).items():
            digest = self.asked.get(key)
            if digest is not None:
                accepted[key] = (digest, response.model_dump(by_alias=True, mode="json", exclude_none=True))
        return accepted
