"""Reshape `allowzero=1` as `allowzero=0` where no element of the target shape can be a 0 that the two readings
would take differently.

OpenVINO's Reshape without `special_zero` reads a 0 in its pattern as a zero dim: the translation writes it as ONNX's
`allowzero=1` (translate/ops/shape.py), as it does for the shapes around loops (translate/ops/control_flow/common.py)
and for patterns computed at run time. With `allowzero=0` a 0 at position i copies the input's dim i instead. The
two agree at every position whose element is
* a constant other than 0 (-1 included);
* a dim known to be positive (a static size, read from a Shape);
* the size of the input's own axis i, read from a Shape of it or of a value whose axis has that size whatever it is
  (`recurrent/full_lengths.dim_root`: through MatMuls by a matrix, elementwise ops, broadcasts against 1, Transposes,
  Squeezes, ...): where it is 0, copying it gives 0 too.
A Reshape all of whose target positions are so needs no `allowzero`, which onnx2torch does not implement and older
runtimes predate (opset 14); the others keep it, where the shape may hold a 0.
"""

from __future__ import annotations

import onnx_ir as oir

from ir2onnx.passes.analysis.graph import all_nodes, attr, input_at, is_default_domain
from ir2onnx.passes.analysis.shapes import StaticShapes
from ir2onnx.passes.analysis.values import const_array, derivations, rank_of, shape_of
from ir2onnx.passes.recurrent.full_lengths import Dim, _shape_element, _vector_length, dim_root

_INT_CASTS = {int(t) for t in (oir.DataType.INT64, oir.DataType.INT32)}


class ReshapeWithoutAllowZeroPass(oir.passes.InPlacePass):
    def call(self, model: oir.Model) -> oir.passes.PassResult:
        with derivations():
            safe = [n for n in all_nodes(model.graph) if n.op_type == "Reshape" and is_default_domain(n)
                    and attr(n, "allowzero", 0) and _copy_safe(n)]
        for node in safe:
            del node.attributes["allowzero"]  # (the default, 0)
        return oir.passes.PassResult(model, modified=bool(safe))


def _copy_safe(node: oir.Node) -> bool:
    x, target = node.inputs[0], input_at(node, 1)
    length = _vector_length(target)
    if x is None or target is None or length is None:
        return False
    x_rank = rank_of(x)
    statics = StaticShapes()
    for i in range(length):
        e = _element(target, i)
        if isinstance(e, int):
            if e == 0:
                return False
            continue
        if e is None:
            return False
        if _positive(e, statics):
            continue
        if x_rank is None or i >= x_rank or dim_root(e) != dim_root((x, i)):
            return False
    return True


def _positive(d: Dim, statics: StaticShapes) -> bool:
    v, axis = d
    for shape in (statics(v), shape_of(v)):
        if shape is not None and axis < len(shape) and isinstance(shape[axis], int) and shape[axis] > 0:
            return True
    return False


def _element(v: oir.Value, index: int) -> int | Dim | None:
    """Element `index` of the integer vector v: a constant, or the (value, axis) whose size it is, else None."""
    if index < 0:
        n = _vector_length(v)
        if n is None or index < -n:
            return None
        index += n
    c = const_array(v)
    if c is not None:
        flat = c.reshape(-1)
        return int(flat[index]) if index < flat.size else None
    node = v.producer()
    if node is None or not is_default_domain(node) or not node.inputs or node.inputs[0] is None:
        return None
    if node.op_type == "Identity" or (node.op_type == "Cast" and attr(node, "to") in _INT_CASTS):
        return _element(node.inputs[0], index)
    if node.op_type == "Concat":
        for piece in node.inputs:
            n = _vector_length(piece)
            if piece is None or n is None:
                return None
            if index < n:
                return _element(piece, index)
            index -= n
        return None
    if node.op_type in ("Unsqueeze", "Squeeze", "Reshape", "ReduceProd", "ReduceMax", "ReduceMin") and index == 0 \
            and _one_element(node.inputs[0]):  # (a reduction of one element is that element)
        return _element(node.inputs[0], 0)
    if node.op_type == "Gather" and attr(node, "axis", 0) == 0:
        picked = const_array(input_at(node, 1))
        if picked is None or picked.ndim > 1 or index >= max(picked.size, 1):
            return None
        return _element(node.inputs[0], int(picked.reshape(-1)[index]))
    return _shape_element(v, index)  # (a Shape)


def _one_element(v: oir.Value) -> bool:
    shape = shape_of(v)
    return shape is not None and all(d == 1 for d in shape)
