"""SparseFillEmptyRows-16: give every row of a 2-D sparse tensor without an entry one entry (row, 0) holding the
default value.

Inputs: values [M], dense_shape [2], indices [M, 2] (rows, columns), default_value (a scalar of the values' type).
Outputs: the indices [M + E, 2] and values [M + E] of the entries with the E fillers added, and a boolean [rows]
telling which rows were empty.

What OpenVINO's CPU plugin computes (established by experiment): the entries, fillers included, come sorted by
(row, column). It sorts with std::sort, which is not stable: entries sharing a position (which a well-formed sparse
tensor does not have) keep their input order up to 16 entries (libstdc++ sorts those by insertion) and come in an
order of its own making beyond; the composition keeps them in input order. With no entries at all the plugin fails
(a null data pointer); the composition fills every row.

The composition counts the entries of every row (ScatterElements add), takes the empty rows with NonZero, appends
their fillers and orders everything with an ascending TopK on row * columns + column, which onnxruntime (like the
ONNX specification) breaks ties by position, so the order is stable.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import onnx_dtype
from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.registry import converter


@converter("SparseFillEmptyRows", "opset16", onnx="ScatterElements (add), NonZero, Concat, TopK, Gather")
def sparse_fill_empty_rows(ctx: LayerContext) -> list[oir.Value]:
    b = ctx.b
    i64 = oir.DataType.INT64
    values = ctx.inputs[0]
    shape = b.cast(ctx.inputs[1], i64) if ctx.input_type(1).name != "i64" else ctx.inputs[1]
    indices = b.cast(ctx.inputs[2], i64) if ctx.input_type(2).name != "i64" else ctx.inputs[2]
    default = b.reshape(ctx.inputs[3], [1])
    rows, cols = b.slice(shape, [0], [1], [0]), b.slice(shape, [1], [2], [0])
    entry_rows = b.reshape(b.slice(indices, [0], [1], [1]), [-1])
    counts = b.op("ScatterElements", [
        b.op("ConstantOfShape", [rows], {"value": np.zeros(1, np.int64)}), entry_rows,
        b.op("ConstantOfShape", [b.shape_of(entry_rows)], {"value": np.ones(1, np.int64)})],
        {"axis": 0, "reduction": "add"})
    empty = b.op("Equal", [counts, b.i64(0)])
    empty_rows = b.reshape(b.op("NonZero", [empty]), [-1, 1])  # [E, 1]
    fill_at = b.concat([empty_rows, b.op("Mul", [empty_rows, b.i64(0)])], 1)
    all_at = b.concat([indices, fill_at], 0)
    all_values = b.concat([values, b.op("Expand", [default, b.shape_of(empty_rows, 0, 1)])], 0)
    key = b.op("Add", [b.op("Mul", [b.reshape(b.slice(all_at, [0], [1], [1]), [-1]),
                                     b.op("Max", [cols, b.i64([1])])]),
                       b.reshape(b.slice(all_at, [1], [2], [1]), [-1])])
    _, order = b.op_multi("TopK", [key, b.shape_of(key)], {"axis": 0, "largest": 0, "sorted": 1}, outputs=2)
    out_at = b.op("Gather", [all_at, order], {"axis": 0})
    idx_t = onnx_dtype(ctx.output_type(0))
    return [out_at if idx_t == i64 else b.cast(out_at, idx_t), b.op("Gather", [all_values, order], {"axis": 0}),
            empty]
