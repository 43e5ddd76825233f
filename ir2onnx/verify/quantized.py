"""What the check needs to judge a quantized ONNX model: each output's quantization step.

A model converted with `quantization="onnx"` computes FakeQuantize layers with QuantizeLinear, which rounds
`x / scale` half to even where OpenVINO rounds its own formula: a value at a rounding tie can land one step apart.
An output that a DequantizeLinear produces (directly, or through ops that only move or select its values) is judged
in steps of that DequantizeLinear's scale: one step apart is a correct conversion.
"""

from __future__ import annotations

import json

import numpy as np
import onnx
from onnx import numpy_helper

from ir2onnx.passes.quantized_layout import FLOAT_BIAS

# ops whose output values are some of their (first) input's values: a quantized tensor stays on its grid through them
MOVES = frozenset({"Identity", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Slice", "Gather",
                    "Concat", "Split", "MaxPool", "Expand", "Tile", "DepthToSpace", "SpaceToDepth"})


def holds_quantizers(proto: onnx.ModelProto) -> bool:
    """Whether the main graph runs a QuantizeLinear (a FakeQuantize converted to ONNX's quantized form)."""
    return any(n.op_type == "QuantizeLinear" for n in proto.graph.node)


def output_steps(proto: onnx.ModelProto) -> dict[str, float]:
    """Model output name -> the quantization step of the DequantizeLinear its values come from (its largest scale),
    for the outputs whose values come from one."""
    graph = proto.graph
    producer = {o: n for n in graph.node for o in n.output}
    consts = {t.name: t for t in graph.initializer}
    for n in graph.node:
        if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value":
            consts[n.output[0]] = n.attribute[0].t
    steps: dict[str, float] = {}
    for out in graph.output:
        step = _step(out.name, producer, consts, set())
        if step is not None:
            steps[out.name] = step
    return steps


def _step(name: str, producer: dict[str, onnx.NodeProto], consts: dict[str, onnx.TensorProto],
          seen: set[str]) -> float | None:
    node = producer.get(name)
    if node is None or name in seen:
        return None
    seen.add(name)
    if node.op_type == "DequantizeLinear" and len(node.input) > 1 and node.input[1] in consts:
        scale = numpy_helper.to_array(consts[node.input[1]]).astype(np.float64)
        return float(np.max(np.abs(scale))) if scale.size else None
    if node.op_type not in MOVES:
        return None
    sources = node.input if node.op_type == "Concat" else node.input[:1]
    found = [_step(s, producer, consts, seen) for s in sources if s]
    return None if not found or any(s is None for s in found) else max(found)  # type: ignore[type-var]


# QuantizeLinear inputs scaled by 1 +- TIE_NUDGE: every value that close to a rounding tie rounds the other way
TIE_NUDGE = 2.0**-18


def nudged(model: onnx.ModelProto, sign: int) -> onnx.ModelProto:
    """A copy of `model` (main graph and bodies) whose QuantizeLinear nodes quantize x * (1 + sign * TIE_NUDGE): the
    values within that distance of a rounding tie land on the other side of it; and whose Convs given an int32 bias
    by passes/quantized_layout.py compute with the IR's own bias (their `FLOAT_BIAS` metadata), so that the runs also
    show what that bias's rounding moves. OpenVINO's formula and
    QuantizeLinear round apart only at values within a few float ulps of a tie, so how far the outputs move between
    the nudged runs bounds, output element by output element, what such rounding can explain."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    _nudge(out.graph, sign, [0])
    return out


def _nudge(graph: onnx.GraphProto, sign: int, count: list[int]) -> None:
    nodes = list(graph.node)
    del graph.node[:]
    for node in nodes:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                _nudge(a.g, sign, count)
            for g in a.graphs:
                _nudge(g, sign, count)
        if node.op_type == "QuantizeLinear" and node.domain in ("", "ai.onnx"):
            count[0] += 1
            factor, moved = f"ir2onnx_tie_nudge_{count[0]}", f"ir2onnx_tie_nudged_{count[0]}"
            graph.node.append(onnx.helper.make_node("Constant", [], [factor], value=onnx.helper.make_tensor(
                factor, onnx.TensorProto.FLOAT, [], [1.0 + sign * TIE_NUDGE])))
            graph.node.append(onnx.helper.make_node("Mul", [node.input[0], factor], [moved]))
            node.input[0] = moved
        bias = next((p.value for p in node.metadata_props if p.key == FLOAT_BIAS), None)
        if node.op_type == "Conv" and bias is not None and len(node.input) > 2:  # the IR's own bias, not int32's
            count[0] += 1
            exact = f"ir2onnx_float_bias_{count[0]}"
            values = json.loads(bias)
            graph.node.append(onnx.helper.make_node("Constant", [], [exact], value=onnx.helper.make_tensor(
                exact, onnx.TensorProto.FLOAT, [len(values)], values)))
            node.input[2] = exact
        graph.node.append(node)
