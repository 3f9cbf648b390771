"""`catalog_vectors`: a catalog's tool texts encoded once, kept on disk by content hash so a restart does not
re-encode them.

A catalog's vectors are one `.npy` file named by the SHA-256 of the model's tag, the encoder's variant (ONNX
Runtime's int8 and numpy's float32 vectors are close, not equal: one's are never compared with the other's
requests) and every text, in the cache directory: `$ADK_MCP_GATEWAY_CACHE_DIR`, else
`$XDG_CACHE_HOME/adk-mcp-gateway`, else `~/.cache/adk-mcp-gateway` (a `ToolIndex`'s `cache_dir` overrides all
three, for the encoder's ONNX model too when that index loads the encoder). Within a process, each text's vector is also
remembered, so a catalog that changed by one tool (an upstream's `list_changed`) encodes that tool alone. A cache
that cannot be read or written is only slower: the vectors are computed and the failure logged at debug.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import numpy as np

from gateway.search._bert import MAX_TOKENS, MODEL_TAG, SentenceEncoder, Vectors

__all__ = ["CACHE_DIR_ENV", "catalog_vectors", "default_cache_dir"]

logger = logging.getLogger(__name__)

CACHE_DIR_ENV: Final = "ADK_MCP_GATEWAY_CACHE_DIR"
_REMEMBERED: Final = 20_000
"""Texts whose vectors a process keeps (1.5 KiB each)."""
_remembered: OrderedDict[tuple[str, str], Vectors] = OrderedDict()
"""Vectors by the encoder's variant and the text."""
_lock = threading.Lock()


def default_cache_dir() -> Path:
    """Where encoded catalogs are kept unless a `ToolIndex` is given a directory."""
    configured = os.environ.get(CACHE_DIR_ENV)
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "adk-mcp-gateway"


def _catalog_key(variant: str, texts: Sequence[str]) -> str:
    digest = hashlib.sha256(f"{MODEL_TAG}/{MAX_TOKENS}/{variant}\0".encode())
    for text in texts:
        digest.update(hashlib.sha256(text.encode()).digest())
    return digest.hexdigest()


def _load(path: Path, rows: int, dimensions: int) -> Vectors | None:
    try:
        vectors = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        logger.debug("Tool search: the cached vectors in %s were not read (%s)", path, exc)
        return None
    if vectors.shape != (rows, dimensions) or vectors.dtype != np.float32:
        return None
    return vectors


def _save(path: Path, vectors: Vectors) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Written aside and renamed: another process reading the cache never sees half a file.
        partial = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.partial")
        with partial.open("wb") as file:
            np.save(file, vectors, allow_pickle=False)
        partial.replace(path)
    except OSError as exc:
        logger.debug("Tool search: the vectors were not cached in %s (%s)", path, exc)


def catalog_vectors(encoder: SentenceEncoder, texts: Sequence[str], cache_dir: Path | None) -> Vectors:
    """Each text's unit vector, in order: from the disk cache, from this process's memory, or encoded now."""
    path = (cache_dir or default_cache_dir()) / "tool-vectors" / f"{_catalog_key(encoder.variant, texts)}.npy"
    cached = _load(path, len(texts), encoder.dimensions)
    if cached is not None:
        _remember(encoder.variant, texts, cached)
        return cached
    vectors = np.zeros((len(texts), encoder.dimensions), dtype=np.float32)
    with _lock:
        missing = [position for position, text in enumerate(texts) if (encoder.variant, text) not in _remembered]
        for position, text in enumerate(texts):
            if (encoder.variant, text) in _remembered:
                vectors[position] = _remembered[encoder.variant, text]
    if missing:
        vectors[missing] = encoder.encode([texts[position] for position in missing])
    _remember(encoder.variant, texts, vectors)
    _save(path, vectors)
    return vectors


def _remember(variant: str, texts: Sequence[str], vectors: Vectors) -> None:
    with _lock:
        for text, vector in zip(texts, vectors, strict=True):
            _remembered[variant, text] = vector
            _remembered.move_to_end((variant, text))
        while len(_remembered) > _REMEMBERED:
            _remembered.popitem(last=False)
