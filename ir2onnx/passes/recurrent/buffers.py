"""A carried buffer written one row per iteration (ScatterND or a Concat/Slice write): the row it writes at
each step.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.passes.analysis.affine import Index, Lin, dim0, element0
from ir2onnx.passes.analysis.graph import NoMatch, attr, explicit_perm, producer, through
from ir2onnx.passes.analysis.shapes import StaticShapes
from ir2onnx.passes.analysis.values import const_array, const_ints, shape_of
from ir2onnx.passes.recurrent.views import State


def buffer_row(s: State, index: Index, steps: Lin) -> tuple[oir.Value, bool] | None:
    """(the row written, whether only the last step's row is kept) when `s` is a buffer: a [steps, ...] tensor updated
    at row k in step k (by ScatterND, or by a Concat of the rows before k, the row and the rows after), or a [1, ...]
    tensor updated at row 0 in every step; else None."""
    found = _scatter_write(s, index) or _concat_write(s.body_out, s.body_in, index)
    if found is None:
        return None
    at, row = found
    init_shape, row_shape = shape_of(s.init), shape_of(row)
    # the updates are [1] + the buffer's row shape: the row has the buffer's rank - 1 when the model is valid
    if row is None or init_shape is None or (row_shape is not None and len(init_shape) != len(row_shape) + 1):
        return None
    if at == Lin(k=1) and dim0(s.init, index) == steps:
        return row, False
    if at == Lin(const=0) and init_shape[0] == 1:
        return row, True
    return None

def _scatter_write(s: State, index: Index) -> tuple[Lin, oir.Value | None] | None:
    """(row index, row) of a ScatterND of one row Unsqueeze(row, 0) into the carried buffer (after an Expand giving
    the placeholder its full shape, clipped on run-time shapes, grown as TensorFlow 1's TensorArray grows)."""
    sc = producer(s.body_out, "ScatterND")
    if sc is None or attr(sc, "reduction", "none") != "none":
        return None
    data, idx, upd = sc.inputs
    idx, upd = _unclipped(idx, data), _unclipped(upd, data)
    try:
        at = index.lin(idx)
    except NoMatch:
        return None
    data = _ungrown(data, at, index)
    ex = producer(data, "Expand")
    if ex is not None:  # broadcast to [its own first dim, the row's shape] (TensorFlow's placeholder [n, 1, 1])
        data = ex.inputs[0]
        first = element0(ex.inputs[1], index)
        if first != ("dim0", data) and not (isinstance(first, Lin) and first == dim0(s.init, index)):
            return None
    if data is not s.body_in or (shape_of(idx) or StaticShapes()(idx)) != (1, 1):
        return None
    unsq = producer(upd, "Unsqueeze")
    axes = const_array(unsq.inputs[1]) if unsq is not None else None
    if unsq is None or axes is None or list(axes) != [0]:
        return None
    return at, unsq.inputs[0]

def _concat_write(written: oir.Value, data: oir.Value, index: Index) -> tuple[Lin, oir.Value | None] | None:
    """(row index k, row) of Concat(data[:k], row as [1, ...], data[k + 1:]) on axis 0, TensorFlow Lite's
    TensorListSetItem as OpenVINO's frontend writes it: Slices of all of data's axes, ends [k, -1, ...] made full
    by Where(ends < 0, Shape(data), ends), starts [k + 1, 0, ...] to Shape(data)."""
    cat = producer(written, "Concat")
    if cat is None or int(attr(cat, "axis", 0)) != 0 or len(cat.inputs) != 3:  # type: ignore[arg-type]
        return None
    before, one, after = (producer(v) for v in cat.inputs)
    rank = len(shape_of(data) or ())
    if before is None or after is None or one is None or rank == 0 \
            or not _whole_slice(before, data, rank) or not _whole_slice(after, data, rank):
        return None
    # before: starts all 0, ends [k, full...]
    if const_ints(before.inputs[1]) != [0] * rank:
        return None
    ends = _negative_as_full(through(before.inputs[2], "Reshape", "Cast"), data)
    head, tail = _head_tail(ends)
    if head is None or tail is None or any(t >= 0 for t in tail):
        return None
    # after: starts [k + 1, 0...], ends Shape(data)
    start_head, start_tail = _head_tail(through(after.inputs[1], "Reshape", "Cast"))
    shape = producer(through(after.inputs[2], "Reshape", "Cast"), "Shape")
    if start_head is None or start_tail != [0] * (rank - 1) or shape is None or shape.inputs[0] is not data \
            or int(attr(shape, "start", 0)) != 0 or attr(shape, "end") is not None:  # type: ignore[arg-type]
        return None
    try:
        at, next_at = index.lin(head), index.lin(start_head)
    except NoMatch:
        return None
    if next_at != at + Lin(const=1):
        return None
    row = one.inputs[0]
    if one.op_type == "Unsqueeze" and const_ints(one.inputs[1]) == [0]:
        return at, row
    row_shape = StaticShapes()(row)
    if one.op_type == "Reshape" and row_shape is not None and const_ints(one.inputs[1]) == [1, *row_shape]:
        return at, row
    return None

def _whole_slice(n: oir.Node, data: oir.Value, rank: int) -> bool:
    """A Slice of `data` over its axes 0..rank-1 with unit steps."""
    if n.op_type != "Slice" or n.inputs[0] is not data or len(n.inputs) < 3:
        return False
    axes = const_ints(n.inputs[3]) if len(n.inputs) > 3 and n.inputs[3] is not None else list(range(rank))
    steps = const_ints(n.inputs[4]) if len(n.inputs) > 4 and n.inputs[4] is not None else [1] * rank
    return axes == list(range(rank)) and steps == [1] * rank

def _negative_as_full(v: oir.Value | None, data: oir.Value) -> oir.Value | None:
    """e for Where(e < 0, Shape(data), e) (a negative end meaning the whole axis), else None."""
    where = producer(v, "Where")
    less = producer(where.inputs[0], "Less") if where is not None else None
    shape = producer(through(where.inputs[1], "Cast"), "Shape") if where is not None else None
    zero = const_array(less.inputs[1]) if less is not None else None
    if less is None or shape is None or zero is None or np.any(zero != 0) or less.inputs[0] is not where.inputs[2] \
            or shape.inputs[0] is not data or int(attr(shape, "start", 0)) != 0 or attr(shape, "end") is not None:  # type: ignore[union-attr, arg-type]
        return None
    return where.inputs[2]  # type: ignore[union-attr]

def _head_tail(v: oir.Value | None) -> tuple[oir.Value | None, list[int] | None]:
    """(the one-element first part, the constant rest) of Concat(head, rest) (rest: one or more constants)."""
    cat = producer(v, "Concat")
    if cat is None or int(attr(cat, "axis", 0)) != 0 or len(cat.inputs) < 2:  # type: ignore[arg-type]
        return None, None
    rest: list[int] = []
    for part in cat.inputs[1:]:
        c = const_ints(part)
        if c is None:
            return None, None
        rest += c
    return cat.inputs[0], rest

def _unclipped(v: oir.Value | None, data: oir.Value | None) -> oir.Value | None:
    """The TensorFlow frontend's TensorListSetItem on run-time shapes clips the write's indices and updates to
    min(1, rows of the buffer) rows: Slice(w, [0], Size(index) * Min(Shape(buffer)[0:1], [1]), [0]), the updates
    reshaped to [-1, the buffer's row shape] first. With a one-element index and a non-empty buffer (a loop writing
    row k has k < rows) the Slice keeps w whole: w (for the updates, the Unsqueeze(row, 0) before the Reshape, when
    the buffer's rows are the row's shape). Anything else: `v` unchanged."""
    sl = producer(v, "Slice")
    if sl is None or len(sl.inputs) < 4 or const_ints(sl.inputs[1]) != [0] or const_ints(sl.inputs[3]) != [0] \
            or (len(sl.inputs) > 4 and sl.inputs[4] is not None and const_ints(sl.inputs[4]) != [1]) \
            or not _one_row(sl.inputs[2], data):
        return v
    w = sl.inputs[0]
    rs = producer(w, "Reshape")
    unsq = producer(rs.inputs[0], "Unsqueeze") if rs is not None else None
    if rs is None or unsq is None:
        return w  # the indices, [[k]]
    return rs.inputs[0] if _row_shaped(rs, unsq.inputs[0], data) else v

def _ungrown(data: oir.Value | None, at: Lin, index: Index) -> oir.Value | None:
    """TensorFlow 1's TensorArrayWriteV3 grows the array to the row written: Concat(a, Expand(0, [max(n, at + 1) - n,
    row shape])) with n the rows of a's buffer. Writing row k < n of a buffer that keeps its n rows (what buffer_row
    requires), the growth is empty at every step: a. Anything else: `data` unchanged."""
    cat = producer(data, "Concat")
    if cat is None or int(attr(cat, "axis", 0)) != 0 or len(cat.inputs) != 2:  # type: ignore[arg-type]
        return data
    grown, pad = cat.inputs
    ex_pad, ex = producer(pad, "Expand"), producer(grown, "Expand")
    shape = producer(through(ex_pad.inputs[1], "Reshape", "Cast"), "Concat") if ex_pad is not None else None
    sub = producer(shape.inputs[0], "Sub") if shape is not None and shape.inputs else None
    top = producer(sub.inputs[0], "Max") if sub is not None else None
    if ex is None or top is None or const_array(ex_pad.inputs[0]) is None:  # type: ignore[union-attr]
        return data
    rows = ("dim0", ex.inputs[0])
    if element0(sub.inputs[1], index) != rows or element0(top.inputs[0], index) != rows:  # type: ignore[union-attr]
        return data
    try:
        if index.lin(top.inputs[1]) != at + Lin(const=1):
            return data
    except NoMatch:
        return data
    return grown

def _one_row(end: oir.Value | None, data: oir.Value | None) -> bool:
    """end = Size(a one-element tensor) * Min(Shape(data)[0:1], [1]): 1 for a non-empty `data`."""
    mul = producer(end, "Mul")
    if mul is None:
        return False
    size, low = producer(through(mul.inputs[0], "Reshape"), "Size"), producer(mul.inputs[1], "Min")
    single = StaticShapes()(size.inputs[0]) if size is not None else None
    rows = producer(low.inputs[0], "Shape") if low is not None else None
    return single is not None and int(np.prod(single)) == 1 and rows is not None and rows.inputs[0] is data \
        and int(attr(rows, "start", 0)) == 0 and attr(rows, "end") == 1 and const_ints(low.inputs[1]) == [1]  # type: ignore[union-attr, arg-type]

def _row_shaped(rs: oir.Node, row: oir.Value | None, data: oir.Value | None) -> bool:
    """rs reshapes to Concat([-1], Shape(data)[1:]) and data is Expand(buffer, Concat(.., Shape(row))): the rows of
    data have the row's shape, and the Reshape of Unsqueeze(row, 0) changes nothing. The row's shape may also be
    Gather(Shape(r), perm) for a row Transpose(r, perm)."""
    cat = producer(rs.inputs[1], "Concat")
    tail = producer(cat.inputs[-1], "Shape") if cat is not None and len(cat.inputs) == 2 else None
    cat_rows = producer(data, "Concat")  # a TensorArray grown by rows (_ungrown) has the rows of its first part
    ex = producer(data, "Expand") or (producer(cat_rows.inputs[0], "Expand") if cat_rows is not None
                                      and int(attr(cat_rows, "axis", 0)) == 0 else None)  # type: ignore[arg-type]
    ex_cat = producer(through(ex.inputs[1], "Reshape", "Cast"), "Concat") if ex is not None else None
    row_shape = producer(through(ex_cat.inputs[-1], "Cast"), "Shape") if ex_cat is not None else None
    permuted = producer(through(ex_cat.inputs[-1], "Cast"), "Gather") if ex_cat is not None else None
    moved = producer(row, "Transpose")
    if permuted is not None and moved is not None and int(attr(permuted, "axis", 0)) == 0 \
            and const_ints(permuted.inputs[1]) == explicit_perm(moved):
        # Gather(Shape(r), perm) is the shape of a row Transpose(r, perm) (OpenVINO's layout transposes, NCHW -> NHWC)
        row_shape, row = producer(through(permuted.inputs[0], "Cast"), "Shape"), moved.inputs[0]
    return cat is not None and const_ints(cat.inputs[0]) == [-1] and tail is not None and tail.inputs[0] is data \
        and int(attr(tail, "start", 0)) == 1 and attr(tail, "end") is None and row_shape is not None \
        and row_shape.inputs[0] is row and int(attr(row_shape, "start", 0)) == 0 and attr(row_shape, "end") is None  # type: ignore[arg-type]
