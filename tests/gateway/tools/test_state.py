from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.tools.state import ABSENT, State, scope_of


@dataclass
class Basket:
    items: list[str] = field(default_factory=list[str])


class Unpicklable:
    """Holds a lock, which `copy.deepcopy` refuses to copy."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count = 0


class AmbiguousEquality:
    """Compares like a numpy array: `==` and `!=` cannot be turned into a bool."""

    def __init__(self) -> None:
        self.items: list[int] = []

    def __eq__(self, other: object) -> bool:
        raise ValueError("the truth value is ambiguous")

    def __ne__(self, other: object) -> bool:
        raise ValueError("the truth value is ambiguous")

    __hash__ = None  # pyright: ignore[reportAssignmentType]


# -- prefixes and scopes ---------------------------------------------------------------------------------


def test_the_scope_prefixes_are_the_ones_adk_uses() -> None:
    assert (State.APP_PREFIX, State.USER_PREFIX, State.TEMP_PREFIX) == ("app:", "user:", "temp:")


@pytest.mark.parametrize(
    ("key", "scope"),
    [
        ("counter", "session"),
        ("app:flag", "app"),
        ("user:name", "user"),
        ("temp:scratch", "temp"),
        ("appendix", "session"),
        ("x:app:y", "session"),
    ],
)
def test_scope_of_reads_the_scope_from_the_key_prefix(key: str, scope: str) -> None:
    assert scope_of(key) == scope


# -- setting and reading ---------------------------------------------------------------------------------


def test_setting_a_key_updates_the_value_and_records_it_in_the_delta() -> None:
    state = State({"counter": 0})

    state["counter"] = 1
    state["app:flag"] = True

    assert state["counter"] == 1
    assert state.delta == {"counter": 1, "app:flag": True}
    assert state.to_dict() == {"counter": 1, "app:flag": True}


def test_writes_go_through_to_the_dicts_the_state_was_built_from() -> None:
    value: dict[str, Any] = {"counter": 0}
    delta: dict[str, Any] = {}
    state = State(value, delta)

    state["counter"] = 1

    assert value == {"counter": 1}
    assert delta == {"counter": 1}


def test_reads_look_at_the_delta_before_the_value() -> None:
    state = State({"k": "old", "only_value": 1}, {"k": "new", "only_delta": 2})

    assert state["k"] == "new"
    assert state["only_value"] == 1
    assert state["only_delta"] == 2


def test_membership_iteration_and_length_cover_value_and_delta_keys_once() -> None:
    state = State({"a": 1, "b": 2}, {"b": 3, "c": 4})

    assert "a" in state
    assert "c" in state
    assert "d" not in state
    assert list(state) == ["a", "b", "c"]
    assert len(state) == 3


def test_reading_a_missing_key_raises_key_error_and_get_returns_the_default() -> None:
    state = State({"a": 1})

    with pytest.raises(KeyError):
        state["missing"]
    assert state.get("missing") is None
    assert state.get("missing", 7) == 7
    assert state.get("a") == 1


def test_setdefault_returns_an_existing_value_without_recording_it() -> None:
    state = State({"a": 1})

    assert state.setdefault("a", 2) == 1
    assert not state.has_delta()


def test_setdefault_sets_and_records_a_missing_key() -> None:
    state = State()

    assert state.setdefault("a", 2) == 2
    assert state.delta == {"a": 2}


def test_update_accepts_a_mapping_pairs_and_keywords_and_records_every_key() -> None:
    state = State({"a": 0})

    state.update({"a": 1})
    state.update([("b", 2)])
    state.update(c=3)
    state.update({"d": 4}, e=5)

    assert state.delta == {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5}


def test_to_dict_returns_a_merged_copy_the_state_does_not_share() -> None:
    state = State({"a": 1}, {"b": 2})

    merged = state.to_dict()
    merged["c"] = 3

    assert merged == {"a": 1, "b": 2, "c": 3}
    assert "c" not in state


def test_the_delta_property_is_a_copy() -> None:
    state = State()
    state["a"] = 1

    state.delta["b"] = 2

    assert state.delta == {"a": 1}


def test_a_fresh_state_has_no_delta_and_one_with_a_set_key_has() -> None:
    state = State({"a": 1})
    assert not state.has_delta()

    state["a"] = 1

    assert state.has_delta()


def test_deleting_a_key_is_refused_with_a_hint_to_assign_none() -> None:
    state = State({"a": 1})

    with pytest.raises(TypeError, match="assign None"):
        del state["a"]
    assert state["a"] == 1


# -- nested mutation -------------------------------------------------------------------------------------


def test_appending_to_a_list_read_from_state_records_the_list_in_the_delta() -> None:
    state = State({"cart": ["apple"]})

    state["cart"].append("pear")

    assert state.delta == {"cart": ["apple", "pear"]}


def test_changing_a_dict_inside_a_list_read_from_state_records_the_list() -> None:
    state = State({"orders": [{"id": 1, "status": "open"}]})

    state["orders"][0]["status"] = "shipped"

    assert state.has_delta()
    assert state.delta == {"orders": [{"id": 1, "status": "shipped"}]}


def _add_key(value: dict[str, int]) -> None:
    value["b"] = 2


def _add_member(value: set[int]) -> None:
    value.add(3)


def _extend_bytes(value: bytearray) -> None:
    value.extend(b"c")


def _append_inside_tuple(value: tuple[list[str], int]) -> None:
    value[0].append("y")


def _append_to_field(value: Basket) -> None:
    value.items.append("milk")


@pytest.mark.parametrize(
    ("initial", "mutate", "expected"),
    [
        pytest.param({"a": 1}, _add_key, {"a": 1, "b": 2}, id="dict"),
        pytest.param({1, 2}, _add_member, {1, 2, 3}, id="set"),
        pytest.param(bytearray(b"ab"), _extend_bytes, bytearray(b"abc"), id="bytearray"),
        pytest.param((["x"], 1), _append_inside_tuple, (["x", "y"], 1), id="tuple-holding-a-list"),
        pytest.param(Basket(["egg"]), _append_to_field, Basket(["egg", "milk"]), id="dataclass"),
    ],
)
def test_in_place_changes_to_any_mutable_value_read_from_state_are_recorded(
    initial: Any, mutate: Callable[[Any], None], expected: Any
) -> None:
    state = State({"v": initial})

    mutate(state["v"])

    assert state.delta == {"v": expected}


def test_the_change_is_also_seen_by_to_dict_and_persistent_delta() -> None:
    state = State({"cart": []})
    state["cart"].append("x")

    assert state.to_dict() == {"cart": ["x"]}
    assert state.persistent_delta() == {"cart": ["x"]}


def test_reading_mutable_values_without_changing_them_records_nothing() -> None:
    state = State({"cart": ["apple"], "profile": {"name": "Ada"}, "tags": (1, "a"), "n": 3})

    for key in state:
        _ = state[key]
    _ = state.get("cart")
    _ = state.to_dict()

    assert not state.has_delta()
    assert state.delta == {}


def test_a_second_read_compares_against_the_first_snapshot() -> None:
    state = State({"cart": []})

    state["cart"].append("x")
    state["cart"].append("y")

    assert state.delta == {"cart": ["x", "y"]}


def test_a_change_made_after_the_delta_was_checked_is_still_recorded() -> None:
    state = State({"cart": []})
    cart = state["cart"]
    assert not state.has_delta()

    cart.append("x")

    assert state.delta == {"cart": ["x"]}


def test_a_value_set_in_this_call_and_then_changed_in_place_shows_the_change_in_the_delta() -> None:
    state = State()
    state["cart"] = []

    state["cart"].append("x")

    assert state.delta == {"cart": ["x"]}


def test_a_value_that_cannot_be_deep_copied_is_recorded_as_changed_when_read() -> None:
    holder = Unpicklable()
    state = State({"holder": holder, "plain": 1})

    state["holder"].count += 1

    assert state.delta == {"holder": holder}
    assert state.to_dict()["holder"].count == 1


def test_a_value_whose_equality_raises_is_recorded_as_changed() -> None:
    value = AmbiguousEquality()
    state = State({"array": value})

    _ = state["array"]

    assert state.has_delta()
    assert state.delta["array"] is value


# -- scopes in the delta ---------------------------------------------------------------------------------


def test_the_persistent_delta_leaves_out_temp_keys() -> None:
    state = State({"temp:list": []})
    state["counter"] = 1
    state["app:flag"] = True
    state["user:name"] = "Ada"
    state["temp:scratch"] = "x"
    state["temp:list"].append(1)

    assert state.persistent_delta() == {"counter": 1, "app:flag": True, "user:name": "Ada"}
    assert state.delta == {
        "counter": 1,
        "app:flag": True,
        "user:name": "Ada",
        "temp:scratch": "x",
        "temp:list": [1],
    }


# -- read-only view --------------------------------------------------------------------------------------


def test_the_readonly_view_shows_the_merged_state_and_refuses_writes() -> None:
    state = State({"a": 1}, {"b": 2})

    view = state.readonly_view()

    assert isinstance(view, MappingProxyType)
    assert dict(view) == {"a": 1, "b": 2}
    with pytest.raises(TypeError):
        view["c"] = 3  # pyright: ignore[reportIndexIssue]


# -- property --------------------------------------------------------------------------------------------

_keys = st.sampled_from(["a", "b", "c", "app:a", "user:a", "temp:a", "temp:b"])
_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3),
    max_leaves=8,
)


@given(
    initial=st.dictionaries(_keys, _values, max_size=5),
    sets=st.lists(st.tuples(_keys, _values), max_size=12),
)
def test_any_sequence_of_sets_matches_a_plain_dict_and_the_delta_holds_exactly_the_keys_set(
    initial: dict[str, Any], sets: list[tuple[str, Any]]
) -> None:
    state = State(dict(initial))
    expected = dict(initial)

    for key, value in sets:
        state[key] = value
        expected[key] = value

    assert state.to_dict() == expected
    assert state.delta.keys() == {key for key, _ in sets}
    assert state.persistent_delta().keys() == {key for key, _ in sets if not key.startswith("temp:")}


def test_reads_name_the_keys_read_before_being_written_with_the_values_read() -> None:
    state = State({"count": 1, "cart": ["apple"], "name": "Ann"})
    state["count"] += 1
    state["cart"].append("pear")
    state["fresh"] = "written first"
    assert state["fresh"] == "written first"
    assert "missing" not in state
    assert state.get("user:also_missing") is None
    assert state.reads() == {"count": 1, "cart": ["apple"], "missing": ABSENT, "user:also_missing": ABSENT}


def test_reading_the_whole_state_reads_every_key() -> None:
    state = State({"count": 1, "app:motd": "hi"})
    state.to_dict()
    assert state.reads() == {"count": 1, "app:motd": "hi"}
