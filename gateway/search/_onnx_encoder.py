"""`OnnxEncoder`: all-MiniLM-L6-v2 run by ONNX Runtime, its matrices quantized to int8, for requests in a few ms.

Encoding one request with numpy streams the layers' 42 MB of float32 weights from memory for a product of about
ten rows: memory bound, about 10 ms. Quantized to int8 (ONNX Runtime's dynamic quantization: weights int8 per
output column, each request's activations quantized as it runs), the weights are 11 MB, and one ONNX Runtime call
runs the whole encoder without Python between the operators. The ONNX graph is built here, from the same verified
safetensors weights (nothing is downloaded): embedding LayerNorm, six BERT layers (attention with the padding
mask, exact erf GELU), mean pooling and scaling to length 1; the word-piece table stays in numpy, mapped, so the
graph takes each text's summed word and position vectors.

Building and quantizing take a few seconds, once per machine: the model is kept in the cache directory (the first
`ToolIndex`'s `cache_dir`, else `gateway.search._vector_cache.default_cache_dir`), named by the weights' SHA-256 and
`BUILDER_VERSION`; writing it removes the files older builder versions kept there. A kept model is trusted only once
it loads and gives the published model's similarities on `_PROBE` sentences; otherwise it is built again. Where the
cache directory cannot be written, the model is built in a temporary directory for the process alone (its session
holds it in memory), at each start.
"""

from __future__ import annotations

import importlib
import logging
import math
import os
import re
import tempfile
import threading
from pathlib import Path
from typing import Any, Final

import numpy as np

from gateway.search._bert import HEADS, LAYERS, SentenceEncoder, Vectors, Weights, read_weights

__all__ = ["BUILDER_VERSION", "VARIANT", "OnnxEncoder", "load"]

logger = logging.getLogger(__name__)

# onnxruntime's Linux wheels report usage to Microsoft and keep a device id under the user's cache directory when
# imported, unless told not to before that import: a gateway neither downloads nor reports at run time. An operator
# who set the variable keeps their choice.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

BUILDER_VERSION: Final = 3
"""Part of the kept model's name and of `VARIANT`: a change to the graph, its quantization or how texts are run
builds the model again, and encodes catalogs again."""
VARIANT: Final = f"ort-int8-v{BUILDER_VERSION}"
_OPSET: Final = 17
_PROBE: Final = ("A man is eating food.", "A man is eating a piece of bread.", "The girl is carrying a baby.")
_PROBE_SIMILARITIES: Final = (0.7553, -0.1050)
"""sentence-transformers' all-MiniLM-L6-v2 (torch) for the probe's first sentence against the other two."""
_PROBE_TOLERANCE: Final = 0.03
_KEPT: Final = re.compile(r"all-MiniLM-L6-v2-(?P<weights>[0-9a-f]{16})-ort-int8-v(?P<version>[0-9]+)\.onnx")
"""The names this module gives kept models (whatever its version), and only those."""
_building = threading.Lock()


class OnnxEncoder(SentenceEncoder):
    """The encoder's layers run by an ONNX Runtime session on one thread (a request is too small to share out)."""

    variant = VARIANT
    # One text a run: a product's int8 scale is set by all of its rows, so a text's vector would otherwise depend on
    # the texts batched with it (and a tool's on its catalog); alone, it is what the text alone gives as a request.
    batch = 1

    def __init__(self, directory: Path, weights: Weights, model: Path) -> None:
        super().__init__(directory, weights)
        ort: Any = importlib.import_module("onnxruntime")
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self._session: Any = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])

    def _forward(self, batch: list[list[int]]) -> Vectors:
        embedded, mask = self._embedded(batch)
        (vectors,) = self._session.run(None, {"embedded": embedded, "mask": mask})
        return np.asarray(vectors, dtype=np.float32)

    def answers_like_the_model(self) -> bool:
        """Whether the probe sentences' similarities are the published model's (a kept file may be damaged)."""
        food, bread, baby = self.encode(list(_PROBE))
        found = (float(food @ bread), float(food @ baby))
        return all(abs(got - want) <= _PROBE_TOLERANCE for got, want in zip(found, _PROBE_SIMILARITIES, strict=True))


def load(directory: Path, sha256: str, cache_dir: Path) -> OnnxEncoder | None:
    """The ONNX Runtime encoder, its model kept in `cache_dir` (built there first if missing or damaged); None
    without onnxruntime and onnx installed, or if the model cannot be built or does not answer as it should."""
    if not _installed("onnxruntime"):
        return None
    # The layers' weights are read only to build: the graph holds them, quantized.
    weights = read_weights(directory, "embeddings.")
    model = cache_dir / "models" / f"all-MiniLM-L6-v2-{sha256[:16]}-{VARIANT}.onnx"
    with _building:  # threads building indexes at once build the model once
        if model.is_file():
            encoder = _trusted(directory, weights, model)
            if encoder is not None:
                return encoder
            logger.warning("Tool search: the kept encoder model %s was damaged; building it again", model)
        # Only building needs onnx (importing it costs a start-up a tenth of a second).
        if not _installed("onnx"):
            return None
        try:
            build(read_weights(directory), model)
        except OSError as exc:
            return _built_aside(directory, weights, model, exc)
        except Exception as exc:  # noqa: BLE001 - any failure leaves the numpy encoder, which is only slower
            logger.warning("Tool search encodes with numpy: the ONNX model was not built (%s)", exc)
            return None
        _remove_older(model)
        encoder = _trusted(directory, weights, model)
    if encoder is None:
        logger.warning("Tool search encodes with numpy: the ONNX model built in %s does not answer as it should", model)
    return encoder


def _built_aside(directory: Path, weights: Weights, model: Path, unkept: OSError) -> OnnxEncoder | None:
    """The encoder on a model built in a temporary directory, for this process alone: the cache directory cannot
    be written (read-only, full, not a directory). One warning either way."""
    try:
        with tempfile.TemporaryDirectory(prefix="adk-mcp-gateway-") as aside:
            built = Path(aside) / model.name
            build(read_weights(directory), built)
            # The session reads the whole file when made: the directory may go once it is.
            encoder = _trusted(directory, weights, built)
    except Exception as exc:  # noqa: BLE001 - as for a kept model: the numpy encoder is only slower
        logger.warning(
            "Tool search encodes with numpy: the ONNX model can neither be kept in %s (%s) nor built aside (%s)",
            model.parent,
            unkept,
            exc,
        )
        return None
    if encoder is None:
        logger.warning("Tool search encodes with numpy: the ONNX model built aside does not answer as it should")
        return None
    logger.warning(
        "Tool search: the encoder model cannot be kept in %s (%s); it is built for each process, a few seconds",
        model.parent,
        unkept,
    )
    return encoder


def _remove_older(model: Path) -> None:
    """Remove the models older builder versions kept beside `model` (about 11 MB each, never read again): only
    files named as this module names them; a newer version's file is left to the newer gateway using it."""
    try:
        kept = list(model.parent.iterdir())
        for path in kept:
            named = _KEPT.fullmatch(path.name)
            if named is not None and path != model and int(named["version"]) <= BUILDER_VERSION:
                path.unlink(missing_ok=True)
    except OSError as exc:
        logger.debug("Tool search: older encoder models in %s were not removed (%s)", model.parent, exc)


def _installed(package: str) -> bool:
    try:
        importlib.import_module(package)
    except ImportError:
        logger.info("Tool search encodes with numpy: %s (the search extra) is not installed", package)
        return False
    return True


def _trusted(directory: Path, weights: Weights, model: Path) -> OnnxEncoder | None:
    try:
        encoder = OnnxEncoder(directory, weights, model)
    except Exception as exc:  # noqa: BLE001 - ONNX Runtime raises its own untyped errors for a damaged file
        logger.debug("Tool search: %s did not load (%s)", model, exc)
        return None
    return encoder if encoder.answers_like_the_model() else None


def build(weights: Weights, model: Path) -> None:
    """Write the int8 encoder model to `model` (aside first, then renamed: a reader never sees half a file)."""
    onnx: Any = importlib.import_module("onnx")
    quantization: Any = importlib.import_module("onnxruntime.quantization")
    model.parent.mkdir(parents=True, exist_ok=True)
    aside = f".{os.getpid()}.{threading.get_ident()}"
    built, prepared, partial = (model.with_suffix(f"{aside}.{step}.partial") for step in ("float", "prepared", "int8"))
    try:
        onnx.save(_graph(weights), built)
        # The quantizer's own preparation (shapes inferred, the graph simplified); without it, the quantizer calls
        # logging.warning on the root logger, which also installs a handler there if the application has none.
        quantization.shape_inference.quant_pre_process(built, prepared, skip_symbolic_shape=True)
        graph = onnx.load(prepared)
        matrices = {initializer.name for initializer in graph.graph.initializer}
        # Only products with a weight matrix: attention's two products of activations stay float32.
        products = [node.name for node in graph.graph.node if node.op_type == "MatMul" and node.input[1] in matrices]
        quantization.quantize_dynamic(
            graph, partial, nodes_to_quantize=products, per_channel=True, weight_type=quantization.QuantType.QInt8
        )
        partial.replace(model)
    finally:
        for path in (built, prepared, partial):
            path.unlink(missing_ok=True)


class _Graph:
    """Nodes and initializers of the graph being built, with fresh names for intermediate values."""

    def __init__(self) -> None:
        self.helper: Any = importlib.import_module("onnx.helper")
        self.numpy_helper: Any = importlib.import_module("onnx.numpy_helper")
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._count = 0

    def constant(self, name: str, value: Any) -> str:
        self.initializers.append(self.numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(self, kind: str, *inputs: str, name: str | None = None, **attributes: Any) -> str:
        self._count += 1
        output = f"{kind.lower()}_{self._count}"
        self.nodes.append(self.helper.make_node(kind, list(inputs), [output], name=name or output, **attributes))
        return output


def _graph(weights: Weights) -> Any:
    """The float32 encoder as an ONNX model."""
    g = _Graph()
    width = int(weights["embeddings.LayerNorm.weight"].shape[0])
    head = width // HEADS

    def dense(x: str, *parts: str) -> str:
        """x times the parts' weight matrices side by side, plus their biases (one product for several)."""
        matrix = np.concatenate([weights[f"{part}.weight"] for part in parts]).T
        bias = np.concatenate([weights[f"{part}.bias"] for part in parts])
        product = g.op("MatMul", x, g.constant(f"{parts[0]}.matrix", np.ascontiguousarray(matrix)))
        return g.op("Add", product, g.constant(f"{parts[0]}.biases", bias))

    def norm(x: str, prefix: str) -> str:
        scale, bias = g.constant(f"{prefix}.weight", weights[f"{prefix}.weight"]), f"{prefix}.bias"
        return g.op("LayerNormalization", x, scale, g.constant(bias, weights[bias]), axis=-1, epsilon=1e-12)

    thirds = g.constant("thirds", np.array([width] * 3, dtype=np.int64))
    heads_shape = g.constant("heads_shape", np.array([0, 0, HEADS, head], dtype=np.int64))
    joined_shape = g.constant("joined_shape", np.array([0, 0, width], dtype=np.int64))
    one = g.constant("one", np.array(1.0, dtype=np.float32))
    # Padding is never attended to: a large negative score before the softmax.
    blocked = g.op(
        "Mul",
        g.op("Sub", one, "mask"),
        g.constant("blocked_score", np.array(-1e9, dtype=np.float32)),
    )
    blocked = g.op("Unsqueeze", blocked, g.constant("head_axes", np.array([1, 2], dtype=np.int64)))
    scale = g.constant("attention_scale", np.array(1.0 / math.sqrt(head), dtype=np.float32))
    x = norm("embedded", "embeddings.LayerNorm")
    for number in range(LAYERS):
        p = f"encoder.layer.{number}."
        # Query, key and value are one product, split.
        qkv = dense(x, *(f"{p}attention.self.{part}" for part in ("query", "key", "value")))
        parts = [f"{p}{part}" for part in ("query", "key", "value")]
        g.nodes.append(g.helper.make_node("Split", [qkv, thirds], parts, name=f"{p}split", axis=-1))
        q, k, v = (g.op("Reshape", part, heads_shape) for part in parts)
        scores = g.op("MatMul", g.op("Transpose", q, perm=[0, 2, 1, 3]), g.op("Transpose", k, perm=[0, 2, 3, 1]))
        attention = g.op("Softmax", g.op("Add", g.op("Mul", scores, scale), blocked), axis=-1)
        attended = g.op("MatMul", attention, g.op("Transpose", v, perm=[0, 2, 1, 3]))
        attended = g.op("Reshape", g.op("Transpose", attended, perm=[0, 2, 1, 3]), joined_shape)
        attended = dense(attended, f"{p}attention.output.dense")
        x = norm(g.op("Add", x, attended), f"{p}attention.output.LayerNorm")
        inner = dense(x, f"{p}intermediate.dense")
        # BERT's exact GELU: x·Φ(x) = x/2·(1 + erf(x/√2)).
        erf = g.op("Erf", g.op("Div", inner, g.constant(f"{p}root_two", np.array(math.sqrt(2.0), np.float32))))
        inner = g.op(
            "Mul", g.op("Mul", inner, g.op("Add", erf, one)), g.constant(f"{p}half", np.array(0.5, np.float32))
        )
        out = dense(inner, f"{p}output.dense")
        x = norm(g.op("Add", x, out), f"{p}output.LayerNorm")
    # The mean of the text's token vectors (padding excluded), scaled to length 1.
    token_axis = g.constant("token_axis", np.array([1], dtype=np.int64))
    summed = g.op(
        "ReduceSum",
        g.op("Mul", x, g.op("Unsqueeze", "mask", g.constant("last", np.array([-1], np.int64)))),
        token_axis,
        keepdims=0,
    )
    counted = g.op("Max", g.op("ReduceSum", "mask", token_axis, keepdims=1), one)
    pooled = g.op("Div", summed, counted)
    length = g.op(
        "Max", g.op("ReduceL2", pooled, axes=[1], keepdims=1), g.constant("tiny", np.array(1e-12, np.float32))
    )
    g.nodes.append(g.helper.make_node("Div", [pooled, length], ["vectors"], name="normalized"))
    float32: Any = importlib.import_module("onnx").TensorProto.FLOAT
    graph = g.helper.make_graph(
        g.nodes,
        "all-MiniLM-L6-v2",
        [
            g.helper.make_tensor_value_info("embedded", float32, ["texts", "tokens", width]),
            g.helper.make_tensor_value_info("mask", float32, ["texts", "tokens"]),
        ],
        [g.helper.make_tensor_value_info("vectors", float32, ["texts", width])],
        g.initializers,
    )
    model = g.helper.make_model(graph, opset_imports=[g.helper.make_opsetid("", _OPSET)])
    model.ir_version = 8
    return model
