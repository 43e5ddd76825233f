"""The last gate before a model leaves ir2onnx: the full ONNX checker, strict shape and type inference, and an
onnxruntime session. A failure becomes one `InvalidModelError` naming the IR layer whose nodes are at fault.

Validation never copies weights: it runs on a serialisation of the graph in which large initializers are typed
graph inputs instead (ir2onnx.protos).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import NamedTuple

import onnx
import onnx_ir as oir

from ir2onnx.errors import InvalidModelError
from ir2onnx.passes.analysis.graph import all_nodes
from ir2onnx.protos import weightless_proto
from ir2onnx.translate.builder import LAYER_META
from ir2onnx.translate.ort_helper import start_session_load

_NODE_PATTERNS = (
    re.compile(r"node name: ([^)\s]+)\)"),  # onnx inference: (op_type:X, node name: NAME)
    re.compile(r"Node \(([^)]+)\)"),  # onnxruntime: Node (NAME) Op (X)
    re.compile(r"Node\(([^)]+)\) with schema"),  # onnx checker: arity, attributes
    re.compile(r"node with name '([^']+)'"),  # onnxruntime: no kernel for ...
    re.compile(r"name: (\S+) OpType"),  # onnx checker: topological order
    re.compile(r"[Nn]ode \(?'?([^\s)':,]+)'?\)? has"),
)
_ELEM_TYPE = re.compile(r"elem type: \((\d+)\) vs \((\d+)\)")


class Validation(NamedTuple):
    """A validation under way (start_validation)."""

    verdict: Callable[[], None]  # onnxruntime's verdict: raises InvalidModelError if it refused the model
    proto: onnx.ModelProto  # the weightless proto the checks ran on (protos.complete_weightless completes it)


def validate_model(model: oir.Model, *, runtime: bool = True) -> None:
    """Raise InvalidModelError unless `model` passes onnx.checker, strict inference and (when `runtime` and
    onnxruntime is importable) loads in an onnxruntime session."""
    start_validation(model, runtime=runtime).verdict()


def start_validation(model: oir.Model, *, runtime: bool = True) -> Validation:
    """`validate_model(model)` in two steps: the ONNX checks run now (raising InvalidModelError), and the verdict
    returned gives onnxruntime's (raising InvalidModelError if it refuses the model). With a helper process
    (ort_helper), onnxruntime loads the model there from now on, while this process goes on (the checks, writing the
    files). The model must not change before the verdict is asked for; ask for it before validating another."""
    proto = weightless_proto(model)
    verdict = start_session_load(proto.SerializeToString()) if runtime else None
    try:
        _check(model, proto)
    except BaseException:
        if verdict is not None:
            verdict()  # read even when a check failed: one model at a time
        raise

    def runtime_verdict() -> None:
        error = verdict() if verdict is not None else None
        if error is not None:
            raise _error(model, "does not load in onnxruntime", error)

    return Validation(runtime_verdict, proto)


def _check(model: oir.Model, proto: onnx.ModelProto) -> None:
    """onnx.checker and strict shape inference."""
    try:
        onnx.checker.check_model(proto)
        # no data_prop: onnx's data propagation treats every small integer tensor as a shape vector and refuses
        # valid models (e.g. Sub of [1, n] and [n, 1] index grids: "Invalid rank for Sub broadcasting")
        onnx.shape_inference.infer_shapes(proto, check_type=True, strict_mode=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as e:
        raise _error(model, "fails the ONNX checker", str(e)) from None
    except ValueError as e:  # protobuf refuses to parse messages nested past its depth limit
        if "Unable to parse proto" not in str(e):
            raise
        raise InvalidModelError(f"the converted ONNX model nests {_depth(model.graph)} levels of subgraphs (If/Loop "
                                "bodies within bodies): more than protobuf reads back (its limit is about 100 "
                                "message levels, 3 per subgraph), so onnx and onnxruntime cannot load it") from None


def _nodes(graph: oir.Graph) -> Iterator[oir.Node]:
    yield from all_nodes(graph)


def _depth(graph: oir.Graph) -> int:
    """How many subgraphs deep `graph` nests."""
    inner = [_depth(a.value) for n in graph for a in n.attributes.values() if a.type == oir.AttributeType.GRAPH]
    return 1 + max(inner, default=0)


def _error(model: oir.Model, what: str, message: str) -> InvalidModelError:
    """Name the IR layer whose node the (innermost) error is about, and say what is inconsistent."""
    layers: dict[str, object] = {}
    producers: dict[str, object] = {}
    prefixes: dict[str, object] = {}
    for node in _nodes(model.graph):
        layer = node.meta.get(LAYER_META)
        if layer is None:
            continue
        if node.name:
            layers[node.name] = layer
            # nodes a pass made in place of others carry their name as prefix, which starts with the layer's hint
            prefixes.setdefault(node.name.split("/")[0], layer)
        for out in node.outputs:
            if out.name:
                producers[out.name] = layer
    # inference lists one error a line, the cause first and its consequences after it
    message = next((line for line in message.splitlines() if line.strip()), message)
    found: tuple[int, object] | None = None
    for pattern in _NODE_PATTERNS:
        for m in pattern.finditer(message):
            name = m.group(1)
            layer = layers.get(name) or producers.get(name) or prefixes.get(name.split("/")[0])
            if layer is not None and (found is None or m.start() > found[0]):
                found = (m.start(), layer)
    if found is None:  # a value named in the message (graph outputs, body inputs)
        for name, layer in producers.items():
            pos = message.rfind(f"'{name}'")
            if pos >= 0 and (found is None or pos > found[0]):
                found = (pos, layer)
    detail = _innermost(message)
    if found is None:
        return InvalidModelError(f"the converted ONNX model {what}: {detail}")
    where = found[1].where()  # type: ignore[attr-defined]
    return InvalidModelError(f"{where}: the ONNX model converted from this layer {what}: {detail}")


def _innermost(message: str) -> str:
    """The most specific part of a nested inference message, on one line, with element types named."""
    text = " ".join(message.split())
    text = re.sub(r"^\[ONNXRuntimeError\] : \d+ : \w+ : ", "", text)
    text = re.sub(r"Load model from \S* failed:", "", text)
    for pattern in (r"\(op_type:[^)]*\): ", r"Node \([^)]*\) Op \([^)]*\) "):
        parts = re.split(pattern, text)
        if len(parts) > 1:
            text = parts[-1]
    text = _ELEM_TYPE.sub(lambda m: f"elem type: {_type_name(m.group(1))} vs {_type_name(m.group(2))}", text)
    return text.strip()[:400]


def _type_name(code: str) -> str:
    try:
        return onnx.helper.tensor_dtype_to_np_dtype(int(code)).name
    except (KeyError, ValueError, TypeError):
        return f"({code})"


__all__ = ["start_validation", "validate_model"]
