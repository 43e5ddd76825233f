"""What the check needs to judge a quantized ONNX model: each output's quantization step.

A model converted with `quantization="onnx"` computes FakeQuantize layers with QuantizeLinear, which rounds
`x / scale` half to even where OpenVINO rounds its own formula: a value at a rounding tie can land one step apart.
An output that a DequantizeLinear produces (directly, or through ops that only move or select its values) is judged
in steps of that DequantizeLinear's scale: one step apart is a correct conversion.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

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
    """A copy of `model` (main graph and bodies) whose QuantizeLinear nodes quantize x * (1 + sign * TIE_NUDGE) (plus
    sign * half the bias grid's step after a Conv with an int32 bias, _bias_rounding): the values within that
    distance of a rounding tie land on the other side of it. OpenVINO's formula and
    QuantizeLinear round apart only at values within a few float ulps of a tie, so how far the outputs move between
    the nudged runs bounds, output element by output element, what such rounding can explain."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    _nudge(out.graph, sign, [0])
    return out


def _bias_rounding(graph: onnx.GraphProto, value: str) -> float:
    """How far the value a QuantizeLinear reads may lie from the IR's because passes/quantized_layout.py gave the
    Conv computing it (directly or through a Relu) its bias as int32 on the grid of x_scale * w_scale, as ONNX's
    QLinearConv has it: half that grid's largest step (0 for any other value)."""
    producer = {o: n for n in graph.node for o in n.output}
    consts = {t.name: t for t in graph.initializer}
    node = producer.get(value)
    if node is not None and node.op_type == "Relu":
        node = producer.get(node.input[0])
    if node is None or node.op_type != "Conv" or len(node.input) < 3:
        return 0.0
    dq = producer.get(node.input[2])
    if dq is None or dq.op_type != "DequantizeLinear" or dq.input[0] not in consts or dq.input[1] not in consts:
        return 0.0
    if consts[dq.input[0]].data_type != onnx.TensorProto.INT32:
        return 0.0
    return 0.5 * float(np.max(np.abs(numpy_helper.to_array(consts[dq.input[1]]).astype(np.float64))))


def _nudge(graph: onnx.GraphProto, sign: int, count: list[int]) -> None:
    nodes = list(graph.node)
    shifts = {n.input[0]: _bias_rounding(graph, n.input[0]) for n in nodes if n.op_type == "QuantizeLinear"}
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
            shift = shifts.get(node.input[0], 0.0)
            node.input[0] = moved
            if shift:  # and by the bias's rounding, where it has one
                offset, shifted = f"ir2onnx_bias_nudge_{count[0]}", f"ir2onnx_bias_nudged_{count[0]}"
                graph.node.append(onnx.helper.make_node("Constant", [], [offset], value=onnx.helper.make_tensor(
                    offset, onnx.TensorProto.FLOAT, [], [sign * shift])))
                graph.node.append(onnx.helper.make_node("Add", [moved, offset], [shifted]))
                node.input[0] = shifted
        graph.node.append(node)
