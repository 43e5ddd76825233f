"""Loop and Scan body inputs declare the shapes of what they receive, where those are known.

A body's inputs may leave their shape out (a state a pass made: the carried layout of passes/state_layout.py), and
onnxruntime and onnx's reference implementation do not need it. OpenVINO's ONNX frontend builds a body from its
declared inputs and cannot convert a Conv there on an input of unknown rank ("data.get_partial_shape().rank()
.is_static() failed"). Where an input has no shape, it gets the one its values are known to have at every iteration:
a carried value's (the initial value's and the body's returned value's, each dim where the two agree, others left
unknown; only where their ranks agree), a Scan slice's (the scan input's without its scan axis).
"""

from __future__ import annotations

import onnx_ir as oir

from ir2onnx.passes.analysis.graph import all_nodes, carried_count, is_default_domain, scan_ints
from ir2onnx.passes.analysis.shapes import infer_shapes
from ir2onnx.passes.analysis.values import shape_of


class BodyInputShapesPass(oir.passes.InPlacePass):
    def call(self, model: oir.Model) -> oir.passes.PassResult:
        loops = [n for n in all_nodes(model.graph) if n.op_type in ("Loop", "Scan") and is_default_domain(n)]
        if not any(v.shape is None for n in loops for v in _body(n).inputs):
            return oir.passes.PassResult(model, modified=False)
        infer_shapes(model)
        modified = False
        for node in loops:
            for param, dims in _known(node):
                if param.shape is None and dims is not None:
                    param.shape = oir.Shape(dims)
                    modified = True
        return oir.passes.PassResult(model, modified=modified)


def _body(node: oir.Node) -> oir.Graph:
    return node.attributes["body"].as_graph()


def _known(node: oir.Node) -> list[tuple[oir.Value, tuple[int | None, ...] | None]]:
    """(body input, the dims known for it) for each carried value, and each Scan slice."""
    body = _body(node)
    n = carried_count(node)
    first = 2 if node.op_type == "Loop" else 0  # (a Loop's iteration number and condition are scalars)
    out = []
    for j in range(n):
        returned = j + (1 if node.op_type == "Loop" else 0)  # (a Loop's body returns its condition first)
        if first + j < len(body.inputs) and returned < len(body.outputs):
            out.append((body.inputs[first + j], _agreed(_dims(node.inputs[first + j]), _dims(body.outputs[returned]))))
    if node.op_type == "Scan":
        axes = scan_ints(node, "scan_input_axes", len(node.inputs) - n)
        for j, axis in enumerate(axes):
            dims = _dims(node.inputs[n + j])
            if dims is not None and -len(dims) <= axis < len(dims) and n + j < len(body.inputs):
                out.append((body.inputs[n + j], dims[:axis % len(dims)] + dims[axis % len(dims) + 1:]))
    return out


def _dims(v: oir.Value | None) -> tuple[int | None, ...] | None:
    if v is None:
        return None
    if v.shape is not None:
        return tuple(d if isinstance(d, int) else None for d in v.shape)
    return shape_of(v)


def _agreed(a: tuple[int | None, ...] | None, b: tuple[int | None, ...] | None) -> tuple[int | None, ...] | None:
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(x if x == y else None for x, y in zip(a, b))
