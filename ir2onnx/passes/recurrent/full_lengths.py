"""Sequence lengths that are provably the full length of every batch row: dropped from LSTM/GRU/RNN nodes, and a
ReverseSequence with them becomes a reversing Slice.

Converters of framework models pass lengths that say "every step": OpenVINO's PyTorch frontend gives its
LSTMSequence/GRUSequence/RNNSequence the time dimension of the input, read at run time
(Cast(Expand(Gather(Shape(x), time axis), [batch]))), and other producers a constant. Such lengths change nothing in
the result, but they keep the node from the rewrites that need none: the RNN lowering (onnxruntime's RNN kernel is
2-3x slower than the lowered form at batch 16) and the time chunks of long LSTM/GRU sequences.

Lengths are dropped only when proven: a constant equal to a static time dimension, or a value every element of which
is read from the shape of the recurrent input's time axis, through ops that only move, broadcast or re-type those
elements (Cast to an integer type, Expand, Tile, Concat, reshapes, Gather of a Shape, Min/Max of one size, Max
with 0: the recurrent fusion's clipping) and, on the input's side, through ops that keep the size of the time axis
(Transpose, Squeeze, Unsqueeze, Reshape copying it with a 0, Cast, unary elementwise ops, and another recurrent
node, whose Y has its input's length).

A ReverseSequence over full lengths reverses the whole time axis: `FullReversalPass` makes it one Slice with step -1
on that axis, and drops the Transposes the translation put around it when the axes are elsewhere (ONNX wants them
first; OpenVINO's TensorFlow frontend writes TensorFlow's ReverseV2, the backward half of every Keras Bidirectional
layer, as a ReverseSequence of an Unsqueeze over seq_axis 2): one copy of the sequence instead of three or four.
"""

from __future__ import annotations

from collections.abc import MutableSet

import numpy as np
import onnx_ir as oir

from ir2onnx.passes.analysis.graph import (
    BROADCASTING_BINARY,
    UNARY_ELEMENTWISE,
    all_nodes,
    attr,
    input_at,
    is_default_domain,
)
from ir2onnx.passes.analysis.shapes import StaticShapes, transpose_perm
from ir2onnx.passes.analysis.values import const_array, const_ints, filled_with, int_scalar, rank_of, shape_of
from ir2onnx.passes.rewrite import Emitter, all_names, replace_node

_RECURRENT = ("LSTM", "GRU", "RNN")
_SAME_ELEMENTS = ("Identity", "Reshape", "Squeeze", "Unsqueeze", "Flatten", "Expand", "Tile")
_INTS = {oir.DataType.INT32, oir.DataType.INT64, oir.DataType.UINT32, oir.DataType.UINT64}

Dim = tuple[oir.Value, int]  # (a value, one of its axes): stands for that axis's size


class DropFullSequenceLensPass(oir.passes.InPlacePass):
    def call(self, model: oir.Model) -> oir.passes.PassResult:
        modified = False
        shapes = StaticShapes()
        for node in list(all_nodes(model.graph)):
            lens = input_at(node, 4)
            if node.op_type in _RECURRENT and is_default_domain(node) and lens is not None \
                    and attr(node, "layout", 0) == 0 and full_length(lens, node.inputs[0], shapes):
                node.replace_input_with(4, None)
                modified = True
        return oir.passes.PassResult(model, modified=modified)


class FullReversalPass(oir.passes.InPlacePass):
    def call(self, model: oir.Model) -> oir.passes.PassResult:
        modified = False
        shapes = StaticShapes()
        names = all_names(model.graph)  # collected when first used
        for node in list(all_nodes(model.graph)):
            x, lens = node.inputs[0] if node.inputs else None, input_at(node, 1)
            if node.op_type != "ReverseSequence" or not is_default_domain(node) or lens is None \
                    or not full_length(lens, x, shapes, int(attr(node, "time_axis", 0))):  # type: ignore[arg-type]
                continue
            _reverse_as_slice(node, model.graph, names)
            modified = True
        return oir.passes.PassResult(model, modified=modified)


def _reverse_as_slice(node: oir.Node, root: oir.Graph, names: MutableSet[str]) -> None:
    """Replace the full-length ReverseSequence `node` by a Slice with step -1 on its time axis (of the input of the
    Transposes around it, when there are such: `_inverse_transposes_around`)."""
    source, target = node.inputs[0], node.outputs[0]
    assert source is not None
    axis = int(attr(node, "time_axis", 0))  # type: ignore[arg-type]
    dropped = [node]  # readers first
    around = _inverse_transposes_around(node)
    if around is not None:
        before, after, perm = around
        source, target, axis = before.inputs[0], after.outputs[0], perm[axis]
        dropped = [after, node, before]
    em = Emitter(dropped[-1], root, names)
    y = em.reverse(source, axis)
    em.commit()
    replace_node(dropped[0], [(target, y)], "reversed")
    for n in dropped[1:]:
        replace_node(n, [], "reversed")


def _inverse_transposes_around(node: oir.Node) -> tuple[oir.Node, oir.Node, list[int]] | None:
    """(before, after, before's permutation) when `node` reads a Transpose `before` that nothing else reads and is
    read alone by a Transpose `after` that undoes it, all three in one graph."""
    x, out = node.inputs[0], node.outputs[0]
    if x is None:
        return None
    before, readers, rank = x.producer(), [u.node for u in out.uses()], rank_of(x)
    if before is None or len(readers) != 1 or rank is None or len(x.uses()) != 1 or x.is_graph_output() \
            or out.is_graph_output():
        return None
    after = readers[0]
    if not all(n.op_type == "Transpose" and is_default_domain(n) and n.graph is node.graph for n in (before, after)):
        return None
    p1, p2 = transpose_perm(before, rank), transpose_perm(after, rank)
    return (before, after, p1) if [p1[p2[i]] for i in range(rank)] == list(range(rank)) else None


def full_length(lens: oir.Value, x: oir.Value | None, shapes: StaticShapes | None = None, axis: int = 0) -> bool:
    """Whether every element of `lens` equals the size of `axis` of `x` (axis 0: the time axis of a layout-0
    recurrent node)."""
    if x is None:
        return False
    values = const_array(lens)
    if values is None:
        values = filled_with(lens)  # a constant broadcast to the batch
    if values is not None:
        shape = (shapes or StaticShapes())(x) or shape_of(x)  # the latter: static dims beside run-time ones
        return shape is not None and len(shape) > axis and shape[axis] is not None and values.size > 0 \
            and bool(np.all(values == shape[axis]))
    source = _uniform_source(lens)
    return source is not None and _root(source) == _root((x, axis))


def _uniform_source(v: oir.Value) -> Dim | None:
    """The (value, axis) whose size every element of `v` equals, when `v` is built from that size alone."""
    node = v.producer()
    if node is None or not is_default_domain(node) or not node.inputs or node.inputs[0] is None:
        return None
    op = node.op_type
    if op == "Cast":
        return _uniform_source(node.inputs[0]) if attr(node, "to") in _INTS else None
    if op in _SAME_ELEMENTS:
        return _uniform_source(node.inputs[0])
    if op == "Concat":
        sources = [_uniform_source(i) if i is not None else None for i in node.inputs]
        roots = {_root(s) if s is not None else None for s in sources}
        return sources[0] if len(roots) == 1 and None not in roots else None
    if op == "Gather" and attr(node, "axis", 0) == 0:
        index = int_scalar(input_at(node, 1))
        return None if index is None else _shape_element(node.inputs[0], index)
    if op == "Shape":  # one dim (Shape with start and end)
        return _shape_element(v, 0) if _shape_element(v, 1) is None else None
    if op in ("Min", "Max") and len(node.inputs) == 2:  # of one size twice, or a size and a bound it never passes
        a, b = (_uniform_source(i) if i is not None else None for i in node.inputs)
        if a is not None and b is not None:
            return a if _root(a) == _root(b) else None
        bound = next((int_scalar(i) for i in node.inputs if int_scalar(i) is not None), None)
        if op == "Max" and bound is not None and bound <= 0:  # a size is never negative
            return a or b
    return None


def _shape_element(v: oir.Value, index: int) -> Dim | None:
    """The (value, axis) whose size element `index` of `v` is, when `v` is (a Cast to integers of, or a Gather of
    constant indices from) a Shape."""
    node = v.producer()
    while node is not None and is_default_domain(node) and node.inputs and node.inputs[0] is not None \
            and ((node.op_type == "Cast" and attr(node, "to") in _INTS) or _flattens_vector(node)):
        node = node.inputs[0].producer()
    if node is not None and is_default_domain(node) and node.op_type == "Concat" and index >= 0:
        for piece in node.inputs:  # the piece holding element `index`, each piece's length known
            length = _vector_length(piece)
            if piece is None or length is None:
                return None
            if index < length:
                return _shape_element(piece, index)
            index -= length
        return None
    if node is not None and is_default_domain(node) and node.op_type == "Gather" and attr(node, "axis", 0) == 0 \
            and node.inputs[0] is not None:  # a permutation or selection of a shape (TensorFlow's frontend)
        picked = const_array(input_at(node, 1))
        if picked is None or picked.ndim != 1 or not -picked.size <= index < picked.size:
            return None
        return _shape_element(node.inputs[0], int(picked[index]))
    if node is None or not is_default_domain(node) or node.op_type != "Shape" or node.inputs[0] is None:
        return None
    source = node.inputs[0]
    rank = len(source.shape) if source.shape is not None else None
    start, end = int(attr(node, "start", 0)), attr(node, "end")  # type: ignore[arg-type]
    if rank is None and (start < 0 or index < 0 or (end is not None and int(end) < 0)):  # type: ignore[arg-type]
        return None
    if rank is not None:
        start, stop = _shape_range(node, rank)
        length = stop - start
        if not -length <= index < length:
            return None
        index = index % length
    elif end is not None and index >= int(end) - start:  # type: ignore[arg-type]
        return None
    return source, start + index


def _flattens_vector(node: oir.Node) -> bool:
    """A Reshape of a vector to one axis (the converter's [-1] of a computed shape): its elements in order."""
    target = const_ints(input_at(node, 1)) if node.op_type == "Reshape" else None
    return target is not None and len(target) == 1 and rank_of(node.inputs[0]) == 1


def _vector_length(v: oir.Value | None) -> int | None:
    """The number of elements of the integer vector v, when known (a static shape, a constant's included, a Gather of
    constant indices, a Shape of a value of known rank)."""
    if v is None:
        return None
    shape = StaticShapes()(v)  # a constant's too
    if shape is not None and len(shape) == 1:
        return shape[0]
    node = v.producer()
    if node is None or not is_default_domain(node):
        return None
    if node.op_type == "Cast":
        return _vector_length(node.inputs[0])
    if node.op_type == "Gather" and (picked := const_array(input_at(node, 1))) is not None and picked.ndim == 1:
        return int(picked.size)
    if node.op_type == "Shape" and node.inputs[0] is not None and node.inputs[0].shape is not None:
        start, stop = _shape_range(node, len(node.inputs[0].shape))
        return max(stop - start, 0)
    return None


def _shape_range(node: oir.Node, rank: int) -> tuple[int, int]:
    """The axes [start, stop) a Shape node reads of a value of `rank` axes (its start and end clamped, as ONNX)."""
    start, end = int(attr(node, "start", 0)), attr(node, "end")  # type: ignore[arg-type]
    start = max(0, min(rank, start + rank if start < 0 else start))
    stop = rank if end is None else max(0, min(rank, int(end) + rank if int(end) < 0 else int(end)))  # type: ignore[arg-type]
    return start, stop


def _root(dim: Dim) -> tuple[int, int]:
    v, axis = dim_root(dim)
    return id(v), axis


DIM_ROOTS = "ir2onnx.dim_roots"  # value meta {axis: (value, axis) of the same size}, in memory only


def dim_root(dim: Dim) -> Dim:
    """Follow (value, axis) back through ops that keep the size of that axis (moving it for Transpose, Squeeze,
    Unsqueeze, from a recurrent node's outputs to its input, and from a Gather's output to its indices: an embedding
    lookup's steps are its token ids'; through a MatMul by a matrix, a broadcast against a size of 1, and a Reshape
    whose target element there is an element of a Shape: a Dense layer's) to its origin."""
    v, axis = dim
    while True:
        known = v.meta.get(DIM_ROOTS, {}).get(axis)
        if known is not None:  # recorded by the pass that made v
            v, axis = known
            continue
        node = v.producer()
        if node is None or not is_default_domain(node) or not node.inputs or node.inputs[0] is None:
            break
        source = _axis_source(node, v, axis)
        if source is None:
            break
        v, axis = source
    return v, axis


def _axis_source(node: oir.Node, v: oir.Value, axis: int) -> Dim | None:
    """(input value, axis) of `node` that has the size of `axis` of its output `v`, when there is one."""
    if node.op_type == "Reshape" and (like := _shape_of_whole(input_at(node, 1))) is not None:
        return like, axis  # Reshape(x, Shape(like)): like's dims
    if node.op_type == "Reshape" and attr(node, "allowzero", 0) and (target := input_at(node, 1)) is not None \
            and (picked := _shape_element(target, axis)) is not None:
        return picked  # a target shape whose element there is a dim of another value (Keras' Tensordot: the
        # MatMul's [B*T, N] back to Concat(Gather(Shape(x), [0, 1]), [N])); a literal 0 stays 0 (allowzero)
    if node.op_type == "Gather":
        return _gather_axis(node, axis)
    if node.op_type in BROADCASTING_BINARY and len(node.inputs) == 2:
        return _broadcast_axis(node, v, axis)
    moved = _axis_in_input(node, v, axis)
    return None if moved is None else (node.inputs[0], moved)  # type: ignore[return-value]


def _shape_of_whole(shape: oir.Value | None) -> oir.Value | None:
    """x when `shape` is Shape(x) over all of x's axes."""
    node = shape.producer() if shape is not None else None
    if node is None or node.op_type != "Shape" or not is_default_domain(node) or node.inputs[0] is None \
            or attr(node, "start", 0) != 0 or "end" in node.attributes:
        return None
    return node.inputs[0]


def _gather_axis(node: oir.Node, axis: int) -> Dim | None:
    """The Gather's data or indices axis that has the size of its output's `axis`: the data's axes around the
    gathered one, the indices' axes in its place."""
    data, indices = node.inputs[0], input_at(node, 1)
    data_rank, indices_rank = rank_of(data), rank_of(indices)
    if data is None or indices is None or not data_rank or indices_rank is None:
        return None
    at = int(attr(node, "axis", 0)) % data_rank  # type: ignore[arg-type]
    if axis < at:
        return data, axis
    if axis < at + indices_rank:
        return indices, axis - at
    return data, axis - indices_rank + 1


def _broadcast_axis(node: oir.Node, v: oir.Value, axis: int) -> Dim | None:
    """The input of a broadcasting binary op that alone gives `axis` of its output its size: the other input is of
    known shape with no dim there, or 1 (a bias, a scale: Dense's Add of its bias to its MatMul)."""
    out_rank = rank_of(v)
    if out_rank is None:
        return None
    for this, other in ((node.inputs[0], node.inputs[1]), (node.inputs[1], node.inputs[0])):
        this_rank, other_shape = rank_of(this), StaticShapes()(other)  # a constant's too
        if this is None or this_rank is None or other_shape is None:
            continue
        at = axis - (out_rank - this_rank)  # the axis in `this`, aligned from the right
        other_at = axis - (out_rank - len(other_shape))
        if at >= 0 and (other_at < 0 or other_shape[other_at] == 1):
            return this, at
    return None


def _axis_in_input(node: oir.Node, v: oir.Value, axis: int) -> int | None:
    """The axis of node's first input that has the size of `axis` of its output `v`, when the node keeps it."""
    op = node.op_type
    if op in UNARY_ELEMENTWISE:
        return axis if len(node.inputs) == 1 else None
    if op == "ReverseSequence":  # the input's shape
        return axis
    if op == "MatMul":  # by a matrix: every axis but the last is the first input's
        a_rank = rank_of(node.inputs[0])
        return axis if a_rank is not None and a_rank >= 2 and rank_of(input_at(node, 1)) == 2 \
            and axis < a_rank - 1 else None
    if op == "Transpose":
        rank = rank_of(v)
        return transpose_perm(node, rank)[axis] if rank is not None and axis < rank else None
    if op in ("Squeeze", "Unsqueeze"):
        axes = const_ints(input_at(node, 1)) if len(node.inputs) > 1 else \
            [int(a) for a in node.attributes["axes"].as_ints()] if "axes" in node.attributes else None
        rank = rank_of(node.inputs[0])
        if not axes or rank is None:  # Squeeze without axes drops whichever dims are 1: unknown here
            return None
        if op == "Squeeze":
            kept = [i for i in range(rank) if i not in {a % rank for a in axes}]
            return kept[axis] if axis < len(kept) else None
        out = {a % (rank + len(axes)) for a in axes}
        return None if axis in out else axis - sum(a < axis for a in out)
    if op == "Concat":  # the axes it does not join have every input's size
        rank = rank_of(v)
        return axis if rank is not None and axis != int(attr(node, "axis", 0)) % rank else None  # type: ignore[arg-type]
    if op == "Reshape":  # a 0 in the new shape copies the input's dim at that axis
        shape = const_ints(input_at(node, 1))
        ok = shape is not None and axis < len(shape) and shape[axis] == 0 and not attr(node, "allowzero", 0)
        return axis if ok else None
    if op in _RECURRENT and attr(node, "layout", 0) == 0:
        index = v.index()
        if index == 0:  # Y [T, num_directions, B, H]
            return {0: 0, 2: 1}.get(axis)
        return 1 if axis == 1 else None  # Y_h, Y_c [num_directions, B, H]
    return None

