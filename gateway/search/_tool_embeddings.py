"""`ToolEmbeddings`: tools' texts and a request as static word embeddings, for ranking tools by meaning.

The model is wordllama's default (`l2_supercat`, 256 dimensions, MIT), whose weights and tokenizer come inside its
wheel: nothing is downloaded. It is loaded once per process, when the first index is built (about 60 MiB resident,
0.1 s), never at start-up. Without wordllama installed, `loaded_model()` is None and tool search is lexical.
"""

from __future__ import annotations

import functools
import importlib
import logging
import threading
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

__all__ = ["ToolEmbeddings", "loaded_model"]

logger = logging.getLogger(__name__)

_TEXT_LIMIT: Final = 1000
"""Characters of a text embedded (a padded batch costs memory in proportion to its longest text)."""
_BATCH: Final = 16
_loading = threading.Lock()


def _import_wordllama() -> Any:
    """The `wordllama` package, without the `logging.basicConfig(level=INFO)` its import runs.

    wordllama 0.4 configures the root logger when imported; an application that has not configured logging yet
    would start printing every library's INFO records. The root logger is put back as it was.
    """
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        return importlib.import_module("wordllama")
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


@functools.cache
def _load() -> Any:
    try:
        wordllama = _import_wordllama()
    except ImportError:
        logger.info("Tool search ranks by words only: wordllama (the search extra) is not installed")
        return None
    try:
        # The files are the wheel's own. wordllama 0.4 looks for its bundled tokenizer under `tokenizer/` but
        # ships it in `tokenizers/`, which is where it looks in a cache directory: the package's directory is
        # named as the cache, and downloading is off, so a missing file is an error rather than a network fetch.
        return wordllama.WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)
    except (OSError, ValueError) as exc:
        logger.warning("Tool search ranks by words only: wordllama's bundled model did not load (%s)", exc)
        return None


def loaded_model() -> Any:
    """wordllama's model, loaded on the first call in this process; None without wordllama."""
    with _loading:  # index builds run in worker threads: one load, not one per thread
        return _load()


class ToolEmbeddings:
    """Unit vectors of a list of texts; `similarities` answers each one's cosine to a request."""

    def __init__(self, model: Any, texts: list[str]) -> None:
        self._model = model
        self._vectors = self._embed([text[:_TEXT_LIMIT] for text in texts])

    def _embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        # A text with no token divides by a zero norm: its vector is taken as zero, like nothing, without a warning.
        with np.errstate(invalid="ignore", divide="ignore"):
            vectors = np.asarray(self._model.embed(texts, norm=True, batch_size=_BATCH), dtype=np.float32)
        return np.nan_to_num(vectors, nan=0.0)

    def similarities(self, request: str) -> npt.NDArray[np.float32]:
        """Each text's cosine similarity to `request`, in the texts' order."""
        return self._vectors @ self._embed([request[:_TEXT_LIMIT]])[0]
