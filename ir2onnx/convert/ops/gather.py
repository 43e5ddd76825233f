"""Gather family."""

from __future__ import annotations

import onnx_ir as ir

from ir2onnx.convert.context import LayerContext
from ir2onnx.convert.registry import converter


@converter("Gather", "opset1", "opset7", "opset8")
def gather(ctx: LayerContext) -> ir.Value:
    """batch_dims b > 0: the axis is moved next to the batch dims and GatherND(batch_dims=b) indexes it."""
    b = ctx.b
    rank = ctx.input_rank(0)
    axis = ctx.normalize_axis(int(ctx.require_const(2, "the axis").reshape(-1)[0]), rank)
    x, idx = ctx.inputs[0], ctx.inputs[1]
    bd = ctx.attr_int("batch_dims", 0)
    if bd < 0:
        bd += ctx.input_rank(1)
    if bd == 0:
        return b.op("Gather", [x, idx], {"axis": axis})
    idx = b.cast(idx, ir.DataType.INT64)
    dim = b.shape_of(x, axis, axis + 1)
    idx = b.op("Where", [b.op("Less", [idx, b.i64(0)]), b.op("Add", [idx, dim]), idx])
    if axis != bd:  # bring the gathered axis right after the batch dims
        perm = list(range(bd)) + [axis] + [a for a in range(bd, rank) if a != axis]
        x = b.op("Transpose", [x], {"perm": perm})
    y = b.op("GatherND", [x, b.unsqueeze(idx, [-1])], {"batch_dims": bd})
    if axis != bd:  # y: [batch, K..., M..., N...] -> [batch, M..., K..., N...]
        k = ctx.input_rank(1) - bd
        m = axis - bd
        out_rank = bd + k + (rank - bd - 1)
        perm = list(range(bd)) + list(range(bd + k, bd + k + m)) + list(range(bd, bd + k)) + \
            list(range(bd + k + m, out_rank))
        y = b.op("Transpose", [y], {"perm": perm})
    return y
