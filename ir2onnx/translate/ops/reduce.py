"""Reductions (keep_dims; axes constant, or at run time from opset 18 — ReduceSum from 13)."""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import onnx_dtype
from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.registry import register_made


def reduce_value(ctx: LayerContext, onnx_op: str, x: oir.Value) -> oir.Value:
    """Reduce x over the layer's axes input; OpenVINO's empty axes reduce nothing."""
    keep = ctx.attr_bool("keep_dims", False)
    axes = ctx.const(1)
    if axes is not None:
        axes_list = [int(a) for a in axes.reshape(-1)]
        if not axes_list:
            return ctx.b.op("Identity", [x])
        return ctx.b.reduce(onnx_op, x, axes_list, keep)
    ax = ctx.b.reshape(ctx.b.cast(ctx.inputs[1], oir.DataType.INT64), [-1])
    return ctx.b.reduce(onnx_op, x, ax, keep, noop_with_empty_axes=True)


def _reduce(onnx_op: str):  # type: ignore[no-untyped-def]
    def convert(ctx: LayerContext) -> oir.Value:
        et = ctx.input_type(0)
        if onnx_op == "ReduceSum" and et.numpy.kind in "iu" and et.bits <= 32:
            # summed in int64 and wrapped back, as OpenVINO wraps (onnxruntime's int32 sum does not)
            y = reduce_value(ctx, onnx_op, ctx.b.cast(ctx.inputs[0], oir.DataType.INT64))
            return ctx.b.cast(y, onnx_dtype(et))
        if et.name == "u64" and onnx_op in _U64_SUMS:
            return _u64_sum(ctx, onnx_op)
        return reduce_value(ctx, onnx_op, ctx.inputs[0])

    return convert


_U64_SUMS = {"ReduceSum", "ReduceL1", "ReduceMean", "ReduceProd"}


def _u64_sum(ctx: LayerContext, onnx_op: str) -> oir.Value:
    """uint64 reductions (onnxruntime has no uint64 kernels; its int64 sums saturate instead of wrapping).

    Sums (L1 is the sum: |x| = x) wrap modulo 2^64 like OpenVINO's: the 32-bit halves are summed apart in int64
    (exact below 2^31 elements) and recombined with wrapping arithmetic. The mean is that sum divided by the
    element count in uint64 (integer division, as OpenVINO's). The product is computed in int64, exact while it
    fits in int64."""
    b = ctx.b
    x = ctx.inputs[0]
    if onnx_op == "ReduceProd":
        return b.cast(reduce_value(ctx, onnx_op, b.cast(x, oir.DataType.INT64)), oir.DataType.UINT64)
    n32 = b.const(np.asarray(32, np.uint64))
    high = b.op("BitShift", [x, n32], {"direction": "RIGHT"})
    low = b.op("BitShift", [b.op("BitShift", [x, n32], {"direction": "LEFT"}), n32], {"direction": "RIGHT"})
    low, high = b.cast(low, oir.DataType.INT64), b.cast(high, oir.DataType.INT64)
    low_sum = reduce_value(ctx, "ReduceSum", low)
    high_sum = reduce_value(ctx, "ReduceSum", high)
    total = b.cast(b.op("Add", [low_sum, b.op("Mul", [high_sum, b.i64(1 << 32)])]), oir.DataType.UINT64)
    if onnx_op != "ReduceMean":
        return total
    count = b.op("Div", [b.op("Size", [x]), b.op("Max", [b.op("Size", [total]), b.i64(1)])])
    count = b.cast(b.op("Max", [count, b.i64(1)]), oir.DataType.UINT64)
    return b.op("Div", [total, count])


def _logical(onnx_op: str):  # type: ignore[no-untyped-def]
    """Boolean reductions through uint8 ReduceMin/ReduceMax (ONNX reductions take no booleans)."""

    def convert(ctx: LayerContext) -> oir.Value:
        return ctx.b.cast(reduce_value(ctx, onnx_op, ctx.b.cast(ctx.inputs[0], oir.DataType.UINT8)), oir.DataType.BOOL)

    return convert


for _ir_type, _onnx_op, _opset in (
    ("ReduceSum", "ReduceSum", "opset1"), ("ReduceMean", "ReduceMean", "opset1"), ("ReduceMax", "ReduceMax", "opset1"),
    ("ReduceMin", "ReduceMin", "opset1"), ("ReduceProd", "ReduceProd", "opset1"), ("ReduceL1", "ReduceL1", "opset4"),
    ("ReduceL2", "ReduceL2", "opset4"),
):
    register_made(_reduce(_onnx_op), _ir_type, _opset)

register_made(_logical("ReduceMin"), "ReduceLogicalAnd", "opset1")
register_made(_logical("ReduceMax"), "ReduceLogicalOr", "opset1")
