"""`ToolIndex`: a BM25 index over a catalog's tools (`bm25s`, the `search` extra), for `search_tools`.

Each tool is one document: its name (split at `_`, `-`, `.`, `/` and camelCase humps), title, description and the
names and descriptions of its parameters. Words are lower-cased, English stop words dropped and the rest stemmed
(Snowball, `PyStemmer`), so "sending emails" finds `send_email`. The name's, title's and description's words count
twice: they state what the tool does, where parameter descriptions mostly give examples of values.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Sequence
from typing import Any, Final, cast

from mcp import types

from gateway.errors import ConfigError

__all__ = ["ToolIndex"]

_WORD: Final = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_STOP_WORDS: Final = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "get",
        "how",
        "i",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "please",
        "show",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "this",
        "to",
        "tool",
        "tools",
        "use",
        "using",
        "via",
        "want",
        "was",
        "we",
        "what",
        "when",
        "which",
        "who",
        "will",
        "with",
        "you",
        "your",
    ]
)
_WEIGHT: Final = 2
_PROPERTY_WORDS_LIMIT: Final = 400
"""Parameter text kept per tool, in words (a huge schema must not drown the tool's own description)."""


_MISSING: Final = 'Tool search needs the "search" extra: pip install "adk-mcp-gateway[search]" (bm25s, PyStemmer).'


def _library(name: str) -> Any:
    """An untyped library of the `search` extra (bm25s, PyStemmer's `Stemmer`)."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ConfigError(_MISSING) from exc


def _words(text: str) -> list[str]:
    return [word.lower() for word in _WORD.findall(text)]


def _parameter_text(schema: dict[str, Any]) -> list[str]:
    """Parameter names and descriptions, nested objects and array items included, to a bounded length."""
    words: list[str] = []
    pending: list[Any] = [schema]
    while pending and len(words) < _PROPERTY_WORDS_LIMIT:
        node = pending.pop(0)
        if not isinstance(node, dict):
            continue
        fields = cast("dict[str, Any]", node)
        properties = fields.get("properties")
        if isinstance(properties, dict):
            for name, sub in cast("dict[str, Any]", properties).items():
                words.extend(_words(name))
                if isinstance(sub, dict):
                    sub_fields = cast("dict[str, Any]", sub)
                    for key in ("title", "description"):
                        value = sub_fields.get(key)
                        if isinstance(value, str):
                            words.extend(_words(value))
                    pending.append(sub_fields)
        items = fields.get("items")
        if isinstance(items, dict):
            pending.append(items)
    return words[:_PROPERTY_WORDS_LIMIT]


class ToolIndex:
    """BM25 over a fixed list of tools; build a new one when the catalog changes.

    Raises:
        ConfigError: `bm25s` or `PyStemmer` is not installed (the `search` extra).
    """

    def __init__(self, tools: Sequence[types.Tool]) -> None:
        bm25s = _library("bm25s")
        stemmer = _library("Stemmer").Stemmer("english")
        self._stem: Callable[[list[str]], list[str]] = stemmer.stemWords
        self.tools = list(tools)
        self._retriever: Any = None
        self._vocabulary: dict[str, int] = {}
        documents = [self._document(tool) for tool in self.tools]
        if any(documents):
            retriever = bm25s.BM25()
            # An empty document would leave bm25s without a row for it; a word no query has keeps the rows aligned.
            retriever.index([document or ["\x00"] for document in documents], show_progress=False)
            self._retriever = retriever
            self._vocabulary = cast("dict[str, int]", retriever.vocab_dict)

    def _terms(self, text: str) -> list[str]:
        return self._stem([word for word in _words(text) if word not in _STOP_WORDS])

    def _document(self, tool: types.Tool) -> list[str]:
        title = tool.title or (tool.annotations.title if tool.annotations else None) or ""
        stated = self._terms(" ".join((tool.name, title, tool.description or "")))
        parameters = self._stem([word for word in _parameter_text(tool.input_schema) if word not in _STOP_WORDS])
        return stated * _WEIGHT + parameters

    def search(self, query: str, limit: int, allowed: Callable[[str], bool] | None = None) -> list[types.Tool]:
        """The `limit` best tools for `query` that `allowed` accepts (by name), best first; none match: []."""
        if self._retriever is None or limit <= 0:
            return []
        terms = [term for term in self._terms(query) if term in self._vocabulary]
        if not terms:
            return []
        scores = self._retriever.get_scores(terms)
        ranked = sorted(
            (index for index in range(len(self.tools)) if scores[index] > 0),
            key=lambda index: -float(scores[index]),
        )
        hits: list[types.Tool] = []
        for index in ranked:
            tool = self.tools[index]
            if allowed is None or allowed(tool.name):
                hits.append(tool)
                if len(hits) == limit:
                    break
        return hits
