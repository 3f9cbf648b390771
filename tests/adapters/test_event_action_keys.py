"""`adapters.event_actions`: the actions an agent acts on, as a result's `_meta` keys and back."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from adapters.event_actions import actions_from_meta, actions_to_meta
from adapters.meta_keys import (
    ARTIFACT_DELTA_META_KEY,
    ESCALATE_META_KEY,
    SKIP_SUMMARIZATION_META_KEY,
    TRANSFER_REASON_META_KEY,
    TRANSFER_TO_AGENT_META_KEY,
)

_carried = st.fixed_dictionaries(
    {},
    optional={
        "skip_summarization": st.just(True),
        "escalate": st.just(True),
        "transfer_to_agent": st.text(min_size=1),
        "transfer_reason": st.text(min_size=1),
        "artifact_delta": st.dictionaries(st.text(), st.integers(min_value=0), min_size=1),
    },
)


@given(_carried)
def test_the_carried_actions_read_back_as_they_were_written(actions: dict[str, Any]) -> None:
    assert actions_from_meta(actions_to_meta(actions)) == actions


def test_unset_actions_and_fields_that_do_not_cross_write_no_key() -> None:
    unset = {"skip_summarization": None, "escalate": False, "transfer_to_agent": None, "artifact_delta": {}}
    assert actions_to_meta({**unset, "state_delta": {"k": 1}, "requested_tool_confirmations": {}}) == {}


def test_each_action_has_its_documented_key() -> None:
    meta = actions_to_meta({
        "skip_summarization": True,
        "escalate": True,
        "transfer_to_agent": "billing",
        "transfer_reason": "an invoice",
        "artifact_delta": {"a.txt": 2},
    })  # fmt: skip
    assert meta == {
        SKIP_SUMMARIZATION_META_KEY: True,
        ESCALATE_META_KEY: True,
        TRANSFER_TO_AGENT_META_KEY: "billing",
        TRANSFER_REASON_META_KEY: "an invoice",
        ARTIFACT_DELTA_META_KEY: {"a.txt": 2},
    }


def test_values_of_the_wrong_type_and_other_keys_are_ignored_when_read() -> None:
    meta = {
        ESCALATE_META_KEY: "yes",
        SKIP_SUMMARIZATION_META_KEY: 1,
        TRANSFER_TO_AGENT_META_KEY: 7,
        ARTIFACT_DELTA_META_KEY: {"a.txt": True},
        "io.modelcontextprotocol/serverInfo": {"name": "x"},
    }
    assert actions_from_meta(meta) == {}
    assert actions_from_meta(None) == {}
