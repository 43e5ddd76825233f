"""Run-time axes for ONNX ops that take the axis as an attribute: the input's rank is known, so an If chain picks,
at run time, the branch built for the matching axis (negative axes counted from the end)."""

from __future__ import annotations

from collections.abc import Callable

import onnx_ir as oir

from ir2onnx.translate.builder import GraphBuilder
from ir2onnx.translate.context import LayerContext


def per_axis(ctx: LayerContext, i: int, rank: int, out_dtype: oir.DataType,
             emit: Callable[[GraphBuilder, int], oir.Value], lowest: int = 0) -> oir.Value:
    """emit(builder, axis) for the axis input i normalised on `rank`: called once when the axis is a constant, else
    once per possible axis (`lowest` to rank - 1) inside an If chain selecting the run-time axis (values out of
    that range take the last)."""
    b = ctx.b
    c = ctx.const(i)
    if c is not None:
        return emit(b, ctx.normalize_axis(int(c.reshape(-1)[0]), rank))
    axis = b.reshape(b.cast(ctx.inputs[i], oir.DataType.INT64), [])
    axis = b.op("Where", [b.op("Less", [axis, b.i64(0)]), b.op("Add", [axis, b.i64(rank)]), axis])
    count = max(rank, 1)

    def branch(parent: GraphBuilder, a: int) -> oir.Graph:
        cb = parent.child()
        out = emit(cb, a)
        if not cb.owns(out):
            out = cb.identity(out)
        out.type, out.shape = oir.TensorType(out_dtype), None
        return cb.build([out], b.names.fresh(f"{b.hint}/axis{a}"))

    def chain(parent: GraphBuilder, a: int) -> oir.Value:
        if a == count - 1:
            return emit(parent, a)
        cond = parent.op("Equal", [axis, parent.i64(a)])
        eb = parent.child()
        other = chain(eb, a + 1)
        if not eb.owns(other):
            other = eb.identity(other)
        other.type, other.shape = oir.TensorType(out_dtype), None
        else_g = eb.build([other], b.names.fresh(f"{b.hint}/axis{a + 1}_"))
        return parent.op("If", [cond], {"then_branch": branch(parent, a), "else_branch": else_g})

    return chain(b, min(lowest, count - 1))
