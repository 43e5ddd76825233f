"""An If whose condition the model's shapes decide is its branch, inlined.

The runtime legalisation guards LSTM, GRU and Scan nodes that onnxruntime cannot run on empty tensors behind
`If(Size(x) > 0)` or `If(Shape(x)[axis] > 0)` (passes/empty_inputs.py), where the sizes are not known positive when
it runs. Shapes known by the end of the pipeline (static input shapes given, or dims that later passes and shape
inference settled) can decide such a condition, and any other constant one: the If is then the branch it takes, its
nodes and initializers moved into the If's graph. onnx2torch has no If; other consumers run fewer subgraphs.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.passes.analysis.graph import all_nodes, attr, input_at, is_default_domain
from ir2onnx.passes.analysis.shapes import StaticShapes, infer_shapes
from ir2onnx.passes.analysis.values import const_array, derivations, shape_of
from ir2onnx.passes.rewrite import all_names, inline_branch


class KnownIfsPass(oir.passes.InPlacePass):
    def call(self, model: oir.Model) -> oir.passes.PassResult:
        ifs = [n for n in all_nodes(model.graph) if n.op_type == "If" and is_default_domain(n)]
        if not ifs:
            return oir.passes.PassResult(model, modified=False)
        infer_shapes(model)
        with derivations():
            decided = [(n, taken) for n in ifs if (taken := condition_value(n.inputs[0])) is not None]
        names = all_names(model.graph)
        for node, taken in decided:
            inline_branch(node, node.attributes["then_branch" if taken else "else_branch"].as_graph(), names)
        return oir.passes.PassResult(model, modified=bool(decided))


def condition_value(cond: oir.Value | None) -> bool | None:
    """The condition's value when the model's constants and static shapes decide it, else None."""
    if cond is None:
        return None
    c = _fold(cond)
    if c is not None and c.size == 1:
        return bool(c.reshape(-1)[0])
    node = cond.producer()
    if node is None or not is_default_domain(node) or node.op_type != "Greater" or len(node.inputs) != 2:
        return None
    bound = _fold(node.inputs[1])
    if bound is None or bound.size != 1 or float(bound.reshape(-1)[0]) != 0:
        return None
    return True if _positive(node.inputs[0]) else None


_COMPARE = {"Greater": np.greater, "GreaterOrEqual": np.greater_equal, "Less": np.less, "LessOrEqual": np.less_equal,
            "Equal": np.equal, "And": np.logical_and, "Or": np.logical_or}


def _fold(v: oir.Value | None, depth: int = 0) -> np.ndarray | None:
    """v's value where constants decide it: values.const_array, and the comparisons, logic, Gathers and Sizes that a
    condition is made of."""
    if v is None or depth > 16:
        return None
    c = const_array(v)
    if c is not None:
        return c
    node = v.producer()
    if node is None or not is_default_domain(node) or not node.inputs:
        return None
    ins = [_fold(i, depth + 1) if i is not None else None for i in node.inputs]
    if node.op_type in _COMPARE and len(ins) == 2 and ins[0] is not None and ins[1] is not None:
        return np.asarray(_COMPARE[node.op_type](ins[0], ins[1]))
    if node.op_type == "Not" and ins[0] is not None:
        return np.logical_not(ins[0])
    if node.op_type == "Gather" and len(ins) == 2 and ins[0] is not None and ins[1] is not None:
        return np.take(ins[0], ins[1], axis=int(attr(node, "axis", 0)))  # type: ignore[arg-type]
    if node.op_type == "Size" and node.inputs[0] is not None:
        dims = _dims(node.inputs[0])
        return np.asarray(np.prod(dims), np.int64) if dims is not None and None not in dims else None
    return None


def _positive(v: oir.Value | None) -> bool:
    """v (an integer scalar or one-element vector) is a size known to be positive: the size of a tensor, or one of
    its dims, whose dims are static."""
    node = v.producer() if v is not None else None
    if node is None or not is_default_domain(node) or not node.inputs or node.inputs[0] is None:
        return False
    if node.op_type == "Size":
        dims = _dims(node.inputs[0])
        return dims is not None and all(isinstance(d, int) and d > 0 for d in dims)
    if node.op_type == "Gather" and attr(node, "axis", 0) == 0:
        shape_node = node.inputs[0].producer()
        picked = const_array(input_at(node, 1))
        if shape_node is None or shape_node.op_type != "Shape" or picked is None or picked.size != 1 \
                or shape_node.inputs[0] is None:
            return False
        dims = _dims(shape_node.inputs[0])
        if dims is None:
            return False
        read = dims[int(attr(shape_node, "start", 0)):attr(shape_node, "end", None)]  # type: ignore[misc]
        k = int(picked.reshape(-1)[0])
        return -len(read) <= k < len(read) and isinstance(read[k], int) and read[k] > 0
    return False


def _dims(x: oir.Value) -> tuple[int | None, ...] | None:
    static = StaticShapes()(x)
    if static is not None:
        return static
    partial = shape_of(x)
    if partial is not None:
        return partial
    return None if x.shape is None else tuple(d if isinstance(d, int) else None for d in x.shape)
