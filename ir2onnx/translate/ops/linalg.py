"""Inverse as batched Gauss-Jordan elimination with partial pivoting (ONNX has no matrix inverse op)."""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import GraphBuilder, onnx_dtype
from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.registry import converter

_UNROLL_MAX = 16  # larger or unknown sizes run the elimination steps in an ONNX Loop


@converter("Inverse", "opset14")
def inverse(ctx: LayerContext) -> oir.Value:
    """[A | I] is reduced to [I | A^-1] column by column: the row with the largest |value| in the column (among the
    rows not yet used) is swapped into place, divided by its pivot and subtracted from every other row.
    Computed in f32 for f16/bf16 inputs; a singular matrix gives inf/NaN as in OpenVINO. `adjoint` transposes."""
    b = ctx.b
    et = ctx.input_type(0)
    a = ctx.inputs[0] if et.name in ("f32", "f64") else b.cast(ctx.inputs[0], oir.DataType.FLOAT)
    rank = ctx.input_rank(0)
    if rank < 2:
        raise ctx.error(f"Inverse of a rank-{rank} input (at least 2 dims are needed)")
    n_static = ctx.input_dims(0)[-1] if b.parent is None else None  # dims inside bodies may be stale
    dtype = oir.DataType.DOUBLE if et.name == "f64" else oir.DataType.FLOAT
    n = b.shape_of(a, -1)  # [1]
    rows = b.op("Range", [b.i64(0), b.reshape(n, []), b.i64(1)])
    eye = b.op("CastLike", [b.op("Equal", [b.unsqueeze(rows, [1]), b.unsqueeze(rows, [0])]), a])
    m = b.concat([a, b.op("Expand", [eye, b.shape_of(a)])], -1)
    if n_static is not None and n_static <= _UNROLL_MAX:
        for k in range(n_static):
            m = _step(b, m, b.i64(k), rows)
    else:
        m = _loop(b, m, n, rows, dtype, rank)
    out = b.slice(m, n, b.i64([np.iinfo(np.int64).max]), [-1])
    if ctx.attr_bool("adjoint", False):
        out = b.op("Transpose", [out], {"perm": list(range(rank - 2)) + [rank - 1, rank - 2]})
    return out if et.name in ("f32", "f64") else b.cast(out, onnx_dtype(et))


def _step(b: GraphBuilder, m: oir.Value, k: oir.Value, rows: oir.Value) -> oir.Value:
    """One elimination step on column k (k a scalar int64) of the augmented [..., n, 2n] matrix."""
    col = b.op("Gather", [m, k], {"axis": -1})  # [..., n]
    minus_one = b.op("CastLike", [b.const(-1.0, np.float32), m])
    used = b.op("Less", [rows, k])
    score = b.op("Where", [used, minus_one, b.op("Abs", [col])])
    p = b.op("ArgMax", [score], {"axis": -1, "keepdims": 1})  # [..., 1]
    perm = b.op("Where", [b.op("Equal", [rows, k]), p, b.op("Where", [b.op("Equal", [rows, p]), k, rows])])
    idx = b.op("Expand", [b.unsqueeze(perm, [-1]), b.shape_of(m)])
    m = b.op("GatherElements", [m, idx], {"axis": -2})
    pivot_row = b.unsqueeze(b.op("Gather", [m, k], {"axis": -2}), [-2])  # [..., 1, 2n]
    pivot = b.unsqueeze(b.op("Gather", [pivot_row, k], {"axis": -1}), [-1])  # [..., 1, 1]
    row_k = b.op("Div", [pivot_row, pivot])
    factors = b.unsqueeze(b.op("Gather", [m, k], {"axis": -1}), [-1])  # [..., n, 1]
    reduced = b.op("Sub", [m, b.op("Mul", [factors, row_k])])
    return b.op("Where", [b.unsqueeze(b.op("Equal", [rows, k]), [-1]), row_k, reduced])


def _loop(b: GraphBuilder, m: oir.Value, n: oir.Value, rows: oir.Value, dtype: oir.DataType, rank: int) -> oir.Value:
    body = b.child()
    k = body.add_input(body.names.fresh("inverse/k"), oir.DataType.INT64, [])
    cond = body.add_input(body.names.fresh("inverse/cond"), oir.DataType.BOOL, [])
    m_in = body.add_input(body.names.fresh("inverse/m"), dtype, [None] * rank)
    m_out = _step(body, m_in, k, rows)
    graph = body.build([body.identity(cond), m_out], "inverse_body")
    return b.op("Loop", [b.reshape(n, []), None, m], {"body": graph})
