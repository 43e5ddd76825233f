"""A ScatterND that overwrites every row of a fresh buffer, in order, with the rows of one tensor is that tensor.

TensorFlow 1's TensorArray.unstack (tf.nn.dynamic_rnn's input), as OpenVINO's TensorFlow frontend writes it, scatters
the sequence into a zero buffer of its own shape: ScatterND(Expand(zeros [n, 1, ...], Shape(x)), Unsqueeze(Range(0,
n, 1), -1), x) with n = x's first dim. Every row k of the result is row k of x: the result is x. The loop that reads
the array then reads x itself, whose shape (and so whose length) is known, which the recurrent fusion needs.
"""

from __future__ import annotations

import onnx_ir as oir

from ir2onnx.passes.analysis.affine import Index, Lin, dim_lin, element0, outer_index
from ir2onnx.passes.analysis.graph import (
    UNARY_ELEMENTWISE,
    NoMatch,
    all_nodes,
    attr,
    is_default_domain,
    producer,
    through,
)
from ir2onnx.passes.analysis.shapes import StaticShapes
from ir2onnx.passes.analysis.values import const_ints
from ir2onnx.passes.rewrite import record


class FullScatterPass(oir.passes.InPlacePass):
    def call(self, model: oir.Model) -> oir.passes.PassResult:
        modified = False
        for node in list(all_nodes(model.graph)):
            if node.op_type == "ScatterND" and is_default_domain(node) and not node.outputs[0].is_graph_output() \
                    and _is_full(node):
                record(node.outputs[0], node.inputs[2])  # type: ignore[arg-type]
                node.outputs[0].replace_all_uses_with(node.inputs[2])  # type: ignore[arg-type]
                node.graph.remove(node, safe=True)  # type: ignore[union-attr]
                modified = True
        return oir.passes.PassResult(model, modified=modified)


def _is_full(node: oir.Node) -> bool:
    data, indices, updates = (list(node.inputs) + [None, None, None])[:3]
    if updates is None or attr(node, "reduction", "none") != "none":
        return False
    index = outer_index()
    rows = ("dim0", updates)
    # indices: Range(0, rows of updates, 1) as a column
    col = producer(through(indices, "Cast"), "Unsqueeze")
    rng = producer(through(col.inputs[0], "Cast"), "Range") if col is not None else None
    if col is None or rng is None or const_ints(col.inputs[1]) not in ([1], [-1]):
        return False
    try:
        if index.lin(rng.inputs[0]) != Lin() or index.lin(rng.inputs[2]) != Lin(const=1):
            return False
        if element0(rng.inputs[1], index) != rows and index.lin(rng.inputs[1]) != _dim0_lin(updates):
            return False
    except NoMatch:
        return False
    # data: Expand(c, Shape(updates)) with c [rows or 1, 1, ...]: the shape of updates
    ex = producer(data, "Expand")
    shape = producer(through(ex.inputs[1], "Reshape", "Cast"), "Shape") if ex is not None else None
    if shape is None or _shaped_as(shape.inputs[0]) is not _shaped_as(updates) or int(attr(shape, "start", 0)) != 0 \
            or attr(shape, "end") is not None:
        return False
    return _unit_or_rows(ex.inputs[0], updates, index)  # type: ignore[union-attr]


def _unit_or_rows(c: oir.Value | None, updates: oir.Value, index: Index) -> bool:
    """c broadcasts to the shape of updates without changing it: a constant of ones' shape, or Expand(scalar,
    Concat([rows of updates], [1, ...]))."""
    if c is None:
        return False
    if c.const_value is not None:
        return all(d == 1 for d in c.const_value.shape)
    ex = producer(c, "Expand")
    if ex is None or ex.inputs[0] is None or ex.inputs[0].const_value is None or ex.inputs[0].const_value.size != 1:
        return False
    cat = producer(through(ex.inputs[1], "Reshape", "Cast"), "Concat")
    ones = const_ints(cat.inputs[1]) if cat is not None and len(cat.inputs) == 2 else None
    rank = len(updates.shape) if updates.shape is not None else None
    if cat is None or not ones or any(d != 1 for d in ones) or StaticShapes()(cat.inputs[0]) != (1,) \
            or rank is None or 1 + len(ones) > rank:  # [rows, 1, ...], at most the rank of updates
        return False
    first = element0(cat.inputs[0], index)  # type: ignore[arg-type]
    return first == ("dim0", updates) or first == _dim0_lin(updates)


def _dim0_lin(v: oir.Value) -> Lin | None:
    try:
        return dim_lin(v, 0)
    except NoMatch:
        return None


def _shaped_as(v: oir.Value | None) -> oir.Value | None:
    """The value `v` has the shape of, through ops that keep their first input's shape (OpenVINO's frontend may read
    the shape of the reversed sequence for the forward one's buffer)."""
    while (n := producer(v, "ReverseSequence", "Identity", "Cast", *UNARY_ELEMENTWISE)) is not None \
            and n.inputs and n.inputs[0] is not None and (n.op_type == "ReverseSequence" or len(n.inputs) == 1):
        v = n.inputs[0]
    return v
