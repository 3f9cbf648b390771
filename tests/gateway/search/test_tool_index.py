"""`ToolIndex`, the ranking behind `search_tools`: how a request's words meet a tool's name, description and schema.

Real bm25s, PyStemmer and the search extra's sentence encoder (all-MiniLM-L6-v2) over small catalogs written for
each behaviour; the search tool
around the index (policy, schemas, transports) is tested in tests/gateway/hub/test_tool_search.py.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest
from mcp import types

from gateway.search import _sentence_encoder
from gateway.search.tool_index import ToolIndex


def tool(name: str, description: str = "", /, **parameters: str) -> types.Tool:
    properties: dict[str, Any] = {key: {"type": "string", "description": text} for key, text in parameters.items()}
    return types.Tool(name=name, description=description, input_schema={"type": "object", "properties": properties})


def ranked(tools: list[types.Tool], query: str, limit: int = 3) -> list[str]:
    return [hit.name for hit in ToolIndex(tools).search(query, limit)]


CHAT = [
    tool("chat_create_channel", "Create a channel.", name="Channel name"),
    tool("chat_list_channels", "List channels with their member counts."),
    tool("chat_delete_channel", "Delete a channel."),
    tool("chat_post_message", "Post a message to a channel.", channel="Channel id", text="Message text"),
]


def test_a_camel_case_or_kebab_case_name_is_found_by_its_words() -> None:
    tools = [tool("getCurrentWeather"), tool("resolve-library-id"), tool("list_files")]

    assert ranked(tools, "current weather", 1) == ["getCurrentWeather"]
    assert ranked(tools, "resolve library", 1) == ["resolve-library-id"]


def test_a_request_finds_a_tool_through_another_form_of_its_words() -> None:
    tools = [tool("send_email", "Sends an email."), tool("list_labels", "Lists labels.")]

    assert ranked(tools, "sending emails", 1) == ["send_email"]


def test_a_common_synonym_of_a_tools_verb_finds_it() -> None:
    assert ranked(CHAT, "remove the channel", 1) == ["chat_delete_channel"]
    assert ranked(CHAT, "make a new channel", 1) == ["chat_create_channel"]


def test_a_common_synonym_of_a_tools_noun_finds_it() -> None:
    tools = [
        tool("tracker_create_issue", "Open an issue in a project.", title="Title"),
        tool("tracker_list_projects", "List projects."),
        tool("notes_create_note", "Create a note.", text="Text"),
    ]

    assert ranked(tools, "new bug: login crashes", 1) == ["tracker_create_issue"]


def test_a_question_asking_which_things_exist_prefers_the_listing_tool() -> None:
    assert ranked(CHAT, "which channels do we have", 1) == ["chat_list_channels"]


def test_the_service_named_in_a_tools_name_outweighs_it_being_mentioned_in_another_description() -> None:
    tools = [
        tool("github_list_pull_requests", "List pull requests in a repository.", owner="Owner"),
        tool(
            "bitbucket_list_pull_requests",
            "List pull requests, including those imported from GitHub: GitHub pull requests keep their GitHub numbers.",
            repo="Repository",
        ),
    ]

    assert ranked(tools, "open pull requests on github", 1) == ["github_list_pull_requests"]


def test_a_word_only_in_a_parameter_counts_less_than_the_same_word_in_the_name_and_description() -> None:
    tools = [
        tool("billing_create_invoice", "Create an invoice for a customer.", customer="Customer id"),
        tool(
            "crm_create_note",
            "Create a note on a record.",
            record="Record id, such as an invoice, an invoice line or an invoice payment",
        ),
    ]

    assert ranked(tools, "create an invoice", 1) == ["billing_create_invoice"]


def test_a_request_sharing_no_word_with_any_tool_finds_nothing() -> None:
    assert ranked(CHAT, "zebra quantum", 3) == []


def test_a_related_word_is_found_in_any_of_its_forms_and_a_phrasal_verb_counts_as_one_word() -> None:
    tools = [*CHAT, tool("chat_update_channel", "Change a channel's topic or settings.")]

    assert ranked(tools, "removing a channel", 1) == ["chat_delete_channel"]
    assert ranked(tools, "set up a channel for the launch", 1) == ["chat_create_channel"]


def test_a_requests_own_word_outweighs_a_word_related_to_another_of_its_words() -> None:
    tools = [tool("chat_delete_message", "Delete a message."), tool("chat_remove_member", "Remove a member.")]

    assert ranked(tools, "remove", 2) == ["chat_remove_member", "chat_delete_message"]


SERVICES = [
    tool("files_read_file", "Read a file and return its text.", path="Path of the file"),
    tool("files_delete_file", "Delete a file.", path="Path of the file"),
    tool("weather_get_forecast", "Forecast for a city: temperature, rain and wind.", city="City name"),
    tool("mail_send_email", "Send an email.", to="Recipient", body="Body"),
    tool("shop_create_product", "Add a product to the store's catalog.", title="Product title", price="Price"),
    tool("bank_get_balance", "The balance of a bank account.", account="Account id"),
    tool("auth_get_current_user", "The signed-in user's profile."),
    tool("calendar_create_event", "Create an event in a calendar.", start="Start time", title="Title"),
    tool("flights_book_flight", "Book a flight.", origin="From", destination="To", date="Date"),
]


@pytest.fixture
def without_encoder(monkeypatch: pytest.MonkeyPatch) -> None:
    """`import tokenizers` fails, as where the encoder's part of the extra is not installed (the process's encoder,
    if loaded, is put back afterwards)."""
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    monkeypatch.setattr(_sentence_encoder, "_loaded", [])


def test_a_request_sharing_no_word_with_the_right_tool_finds_it_by_meaning() -> None:
    assert ranked(SERVICES, "who am I logged in as", 1) == ["auth_get_current_user"]
    assert ranked(SERVICES, "purchase a plane seat to Lisbon", 1) == ["flights_book_flight"]
    assert "bank_get_balance" in ranked(SERVICES, "how much money is left in my savings", 3)


def test_a_request_with_no_word_at_all_finds_nothing() -> None:
    assert ranked(SERVICES, "", 3) == []
    assert ranked(SERVICES, "?!", 3) == []


def test_meaning_can_be_left_out_of_the_ranking() -> None:
    index = ToolIndex(SERVICES, semantic=False)

    assert not index.semantic
    assert index.search("who am I logged in as", 3) == []
    assert [hit.name for hit in index.search("remove a file", 1)] == ["files_delete_file"]


@pytest.mark.usefixtures("without_encoder")
def test_without_the_encoder_search_ranks_by_words_alone() -> None:
    index = ToolIndex(SERVICES)

    assert not index.semantic
    assert index.search("who am I logged in as", 3) == []
    assert [hit.name for hit in index.search("remove a file", 1)] == ["files_delete_file"]
    assert [hit.name for hit in index.search("book a flight to Lisbon", 1)] == ["flights_book_flight"]
