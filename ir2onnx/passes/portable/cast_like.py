"""CastLike(x, like) as Cast(x, to=<like's element type>).

The translation casts a constant to an input's element type with CastLike (a GRN's bias, HardSigmoid's bounds,
attention's -inf), which keeps one converter for every float type. The element type is known once the model is built,
and Cast is the form every consumer implements: onnx2torch has no CastLike, and older runtimes predate it (opset 15).
The node keeps its output value (and so its place in the layer map); only its op, attributes and inputs change.
"""

from __future__ import annotations

import onnx_ir as oir

from ir2onnx.passes.analysis.graph import all_nodes, is_default_domain
from ir2onnx.passes.analysis.shapes import infer_shapes


class CastLikeAsCastPass(oir.passes.InPlacePass):
    def call(self, model: oir.Model) -> oir.passes.PassResult:
        nodes = [n for n in all_nodes(model.graph) if n.op_type == "CastLike" and is_default_domain(n)]
        if any(_target(n) is None for n in nodes):  # values a pass made may have no declared type yet
            infer_shapes(model)
        modified = False
        for node in nodes:
            modified |= _as_cast(node)
        return oir.passes.PassResult(model, modified=modified)


def _target(node: oir.Node) -> oir.DataType | None:
    like = node.inputs[1] if len(node.inputs) > 1 else None
    return like.dtype if like is not None else None


def _as_cast(node: oir.Node) -> bool:
    to = _target(node)
    if to is None:
        return False
    saturate = node.attributes.get("saturate")
    node.op_type = "Cast"
    node.attributes.clear()
    node.attributes["to"] = oir.AttrInt64("to", int(to))
    if saturate is not None:  # (Cast has it from the same opset, 19, for the 8-bit floats)
        node.attributes["saturate"] = saturate
    node.replace_input_with(1, None)
    node.resize_inputs(1)
    return True
