"""`ToolIndex`: BM25 over a catalog's tools (`bm25s`, the `search` extra), field by field, for `search_tools`.

A tool has three fields, each its own BM25 index: its name (split at `_`, `-`, `.`, `/` and camelCase humps), its
title and description, and the names and descriptions of its parameters. A request's score for a tool is the
fields' scores weighted (`FIELD_WEIGHTS`): the name says what the tool does and for which service most tersely,
parameter descriptions mostly give examples of values. Words are lower-cased, stop words dropped and the rest
stemmed (Snowball, `PyStemmer`), so "sending emails" finds `send_email`. A request's word also looks for the words
tools commonly use for it (`gateway.search._tool_vocabulary.RELATED`: "remove" finds `delete`, "bug" finds
`issue`, "which …" finds `list`), at `RELATED_WEIGHT` of its own weight.

With the `search` extra's sentence encoder installed (all-MiniLM-L6-v2, `gateway.search._sentence_encoder`), the
ranking is fused: each tool's name, title and description are encoded once per catalog (`_vector_cache`: off the
event loop, kept on disk by content hash), a request is encoded when searched, and a tool's score is its BM25 score
b saturated (b / (b + `Fusion.saturation`), so that many shared words cannot outweigh meaning without bound), blended
at `Fusion.semantic_weight` with its cosine similarity to the request: "who am I logged in as" finds
`get_current_user` though no word is shared.
A request whose best similarity is under `Fusion.abstain_below` is taken as out of the catalog's scope and finds
nothing, rather than the least bad tool. The weights were learnt on the benchmark's tuning sets only
(tests/benchmarks/_search.py); its held-out sets were never used to choose them.
"""

from __future__ import annotations

import importlib
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, cast

from mcp import types

from gateway.errors import ConfigError
from gateway.search._tool_vocabulary import RELATED, STOP_WORDS

__all__ = ["Fusion", "ToolIndex"]

_WORD: Final = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
FIELD_WEIGHTS: Final = {"name": 1.5, "description": 1.0, "parameters": 0.6}
"""How much a word found in each field counts."""
COVERAGE_EXPONENT: Final = 1.0
"""How strongly the share of the request's words a tool has scales its score."""
RELATED_WEIGHT: Final = 0.7
"""How much a word a request's word is related to counts, against the request's own words."""
_REQUESTS_REMEMBERED: Final = 256
"""Encoded requests an index keeps (an agent often repeats a search)."""


@dataclass(frozen=True)
class Fusion:
    """How similarity in meaning joins the words' ranking (with the sentence encoder installed).

    Attributes:
        semantic_weight: the share of a tool's score that is its cosine similarity to the request.
        saturation: the BM25 score that counts half of the words' share.
        abstain_below: a request whose most similar tool is less similar than this, and which no tool has the
            words of to a BM25 score of `saturation`, finds nothing (the 1st percentile of the tuning requests' best
            similarity, rounded down: 1 in 100 of them would abstain).
    """

    semantic_weight: float = 0.6
    saturation: float = 5.0
    abstain_below: float = 0.22


MEANING_ONLY: Final = Fusion(semantic_weight=1.0, abstain_below=-1.0)
"""The bare encoder: cosine similarity alone, never abstaining (the benchmark's anchor)."""
_PROPERTY_WORDS_LIMIT: Final = 400
"""Parameter text kept per tool, in words (a huge schema must not drown the tool's own description)."""


_MISSING: Final = 'Tool search needs the "search" extra: pip install "adk-mcp-gateway[search]" (bm25s, PyStemmer).'


def _library(name: str) -> Any:
    """An untyped library of the `search` extra (bm25s, PyStemmer's `Stemmer`)."""
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        raise ConfigError(_MISSING) from exc
    if name == "bm25s":
        # bm25s sets its own logger to DEBUG when imported, so its "Building index from tokens" passes whatever
        # level the application chose: it is put back to inherit that level.
        logging.getLogger("bm25s").setLevel(logging.NOTSET)
    return module


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
    """BM25, fused with similarity in meaning where the sentence encoder is installed, over a fixed list of tools;
    build a new one when the catalog changes (building encodes the catalog: run it off the event loop).

    Args:
        tools: the catalog.
        semantic: also rank by meaning, if the encoder is installed (`semantic` says whether it is used).
        cache_dir: where encoded catalogs are kept (default: `gateway.search._vector_cache.default_cache_dir`), and
            the encoder's ONNX model if this index is the process's first to load the encoder.
        fusion: how meaning and words are weighed (the default is the tuned one).

    Raises:
        ConfigError: `bm25s` or `PyStemmer` is not installed (the `search` extra).
    """

    def __init__(
        self,
        tools: Sequence[types.Tool],
        *,
        semantic: bool = True,
        cache_dir: Path | None = None,
        fusion: Fusion | None = None,
    ) -> None:
        bm25s = _library("bm25s")
        stemmer = _library("Stemmer").Stemmer("english")
        self._stem: Callable[[list[str]], list[str]] = stemmer.stemWords
        self.tools = list(tools)
        # Keyed by stem, so that "removing" and "removed" bring what "remove" brings.
        self._related: dict[str, tuple[str, ...]] = {}
        for word, relatives in RELATED.items():
            self._related[self._stem([word])[0]] = self._related.get(self._stem([word])[0], ()) + relatives
        self._fields: list[tuple[float, Any, dict[str, int]]] = []
        documents: dict[str, list[list[str]]] = {field: [] for field in FIELD_WEIGHTS}
        texts: list[str] = []
        for tool in self.tools:
            title = tool.title or (tool.annotations.title if tool.annotations else None) or ""
            documents["name"].append(self._terms(_words(tool.name)))
            documents["description"].append(self._terms(_words(f"{title} {tool.description or ''}")))
            documents["parameters"].append(self._terms(_parameter_text(tool.input_schema)))
            texts.append(f"{' '.join(_words(tool.name))}: {title} {tool.description or ''}".strip())
        for field, weight in FIELD_WEIGHTS.items():
            if any(documents[field]):
                retriever = bm25s.BM25()
                # An empty document would leave bm25s without a row for it; a word no query has keeps rows aligned.
                retriever.index([document or ["\x00"] for document in documents[field]], show_progress=False)
                self._fields.append((weight, retriever, cast("dict[str, int]", retriever.vocab_dict)))
        # Imported here, as bm25s is: numpy and the model cost memory a gateway that never searches does not spend.
        from gateway.search import _sentence_encoder, _vector_cache

        self._fusion = fusion or Fusion()
        self._encoder = _sentence_encoder.loaded_encoder(cache_dir) if semantic and self.tools else None
        self._vectors: Any = None
        self._requests: OrderedDict[str, Any] = OrderedDict()
        self._remembering = threading.Lock()
        if self._encoder is not None:
            self._vectors = _vector_cache.catalog_vectors(self._encoder, texts, cache_dir)
        self.semantic = self._encoder is not None
        """Whether the ranking is fused (BM25 and meaning) rather than BM25 alone."""

    def _terms(self, words: list[str]) -> list[str]:
        return self._stem([word for word in words if word not in STOP_WORDS])

    def _query(self, query: str) -> dict[str, float]:
        """The request's stemmed words with their weights: its own words 1, their related words less."""
        words = _words(query)
        # Two words that are one word written apart ("set up", "back up", "look up") are read as that word.
        for position in range(len(words) - 1):
            if words[position] + words[position + 1] in RELATED:
                words[position : position + 2] = [words[position] + words[position + 1], ""]
        words = [word for word in words if word]
        weights = {term: 1.0 for term in self._terms(words)}
        related = [relative for key in self._stem(words) for relative in self._related.get(key, ())]
        for term in self._stem(related):
            weights.setdefault(term, RELATED_WEIGHT)
        return weights

    def search(self, query: str, limit: int, allowed: Callable[[str], bool] | None = None) -> list[types.Tool]:
        """The `limit` best tools for `query` that `allowed` accepts (by name), best first; none match: []."""
        if not self._fields or limit <= 0 or not _words(query):
            return []
        scores: Any = self._lexical_scores(query) if self._fusion.semantic_weight < 1 else 0.0
        if self._vectors is not None:
            similarities = self._vectors @ self._request_vector(query)
            if float(similarities.max()) < self._fusion.abstain_below and self._words_weak(scores):
                return []
            scores = self._blend(scores, similarities)
        elif isinstance(scores, float):
            return []
        # Ranked in numpy (best first, ties in catalog order): a Python sort over a large catalog cost as much as
        # the rest of a search with a remembered request.
        scored = (scores > 0).nonzero()[0]
        ranked = scored[(-scores[scored]).argsort(kind="stable")]
        hits: list[types.Tool] = []
        for index in ranked:
            tool = self.tools[int(index)]
            if allowed is None or allowed(tool.name):
                hits.append(tool)
                if len(hits) == limit:
                    break
        return hits

    def _request_vector(self, query: str) -> Any:
        # Searches run in worker threads: the remembered requests are shared between them.
        with self._remembering:
            vector = self._requests.get(query)
        if vector is None:
            assert self._encoder is not None
            vector = self._encoder.encode([query])[0]
            with self._remembering:
                self._requests[query] = vector
                while len(self._requests) > _REQUESTS_REMEMBERED:
                    self._requests.popitem(last=False)
        return vector

    def _words_weak(self, lexical: Any) -> bool:
        """Whether no tool has the request's words to the extent that they count for half the words' share."""
        return isinstance(lexical, float) or float(lexical.max()) < self._fusion.saturation

    def _blend(self, lexical: Any, similarities: Any) -> Any:
        """The words' saturated score and the cosine similarity (0 for the dissimilar), weighted."""
        weight = self._fusion.semantic_weight
        words = lexical / (lexical + self._fusion.saturation)
        return (1 - weight) * words + weight * similarities.clip(min=0.0)

    def _lexical_scores(self, query: str) -> Any:
        """Each tool's BM25 score for `query` (an array), or 0.0 when no word of it is in any tool."""
        weights = self._query(query)
        total: Any = 0.0
        covered: Any = 0.0
        for term, weight in weights.items():
            found: Any = None
            for field_weight, retriever, vocabulary in self._fields:
                if term in vocabulary:
                    term_scores = retriever.get_scores([term])
                    total = total + term_scores * (field_weight * weight)
                    found = term_scores > 0 if found is None else found | (term_scores > 0)
            if found is not None:
                covered = covered + found * weight
        if isinstance(total, float):
            return 0.0
        # Coordination: a tool that has more of the request's words beats one that has a few of them often.
        return total * (covered / sum(weights.values())) ** COVERAGE_EXPONENT
