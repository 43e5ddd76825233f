"""Reductions (keep_dims; axes constant, or at run time from opset 18 — ReduceSum from 13)."""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.ir.element_types import ElementType
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
        axes = ctx.const(1)
        if et.name in _SATURATED and onnx_op in _SATURATING:
            return _saturated(ctx, onnx_op, et)
        if onnx_op in ("ReduceL1", "ReduceL2") and axes is not None and axes.size == 0:
            return ctx.b.op("Abs", [ctx.inputs[0]])  # each element reduced alone: |x|
        if et.numpy.kind in "iu" and onnx_op in ("ReduceSum", "ReduceL1", "ReduceMean"):
            return _int_sum(ctx, onnx_op, et)
        if et.numpy.kind in "iu" and onnx_op == "ReduceProd":
            return _int_prod(ctx, et)
        if et.name == "u64" and onnx_op == "ReduceL2":  # (no kernel) in f64, truncated as the integer L2 is
            y = ctx.b.op("Floor", [reduce_value(ctx, onnx_op, ctx.b.cast(ctx.inputs[0], oir.DataType.DOUBLE))])
            return ctx.b.cast(y, oir.DataType.UINT64)
        return reduce_value(ctx, onnx_op, ctx.inputs[0])

    return convert


_SATURATED = ("i8", "u8")
_SATURATING = ("ReduceSum", "ReduceL1", "ReduceL2", "ReduceProd")


def _saturated(ctx: LayerContext, onnx_op: str, et: ElementType) -> oir.Value:
    """i8/u8 sums, norms and products as OpenVINO's CPU plugin computes them (checked by experiment): the exact
    result saturated into the type, as its 8-bit arithmetic saturates (i8 sum of 100, 100, 100 is 127; product of
    100, 2, -1 is -128); L2 is the truncated square root of the saturated sum of squares (i8 10, 10, 10 gives 11).
    Sums in int64; products in f64, whose sign and size past the type's range are right (an overflow to inf
    followed by a zero gives NaN, which is that zero product)."""
    b = ctx.b
    info = np.iinfo(et.numpy)
    if onnx_op == "ReduceProd":
        y = reduce_value(ctx, onnx_op, b.cast(ctx.inputs[0], oir.DataType.DOUBLE))
        y = b.op("Where", [b.op("IsNaN", [y]), b.const(0.0, np.float64), y])
        y = b.op("Clip", [y, b.const(float(info.min), np.float64), b.const(float(info.max), np.float64)])
        return b.cast(y, onnx_dtype(et))
    wide = b.cast(ctx.inputs[0], oir.DataType.INT64)
    axes = ctx.const(1)
    if axes is not None and axes.size == 0:  # each element reduced alone
        y = {"ReduceSum": wide, "ReduceL1": b.op("Abs", [wide]), "ReduceL2": b.op("Mul", [wide, wide])}[onnx_op]
    else:
        y = reduce_value(ctx, "ReduceSumSquare" if onnx_op == "ReduceL2" else onnx_op, wide)
    y = b.op("Clip", [y, b.const(int(info.min), np.int64), b.const(int(info.max), np.int64)])
    if onnx_op == "ReduceL2":
        y = b.op("Floor", [b.op("Sqrt", [b.cast(y, oir.DataType.DOUBLE)])])
    return b.cast(y, onnx_dtype(et))


def _int_sum(ctx: LayerContext, onnx_op: str, et: ElementType) -> oir.Value:
    """Integer sums and L1 norms wrapped into the type, as integer arithmetic wraps (onnxruntime's integer sums
    saturate, and it has no uint64 ones): up to 32 bits summed in int64 (onnxruntime's int64 sums go through double:
    exact below 2^21 elements), 64-bit values by their 32-bit halves (`_sum64`). Means are the exact mean truncated toward zero (the i8/u8 ones too, where
    OpenVINO's CPU plugin saturates the sum before dividing)."""
    b = ctx.b
    x = ctx.inputs[0]
    if onnx_op == "ReduceL1" and et.numpy.kind == "i":
        x = b.op("Abs", [b.cast(x, oir.DataType.INT64)] if et.bits < 64 else [x])  # |int64 min| wraps to itself
    if et.bits < 64:
        total = reduce_value(ctx, "ReduceSum", b.cast(x, oir.DataType.INT64))
        if onnx_op == "ReduceMean":
            total = b.op("Div", [total, _count(ctx)])  # int64 division truncates, as the mean does
        return b.cast(total, onnx_dtype(et))
    if onnx_op != "ReduceMean":
        return b.cast(_sum64(ctx, x), onnx_dtype(et))
    # x = n * q + r with 0 <= r < n: the mean is sum(q) + sum(r) / n, neither sum overflowing
    n = _count(ctx)
    q = b.op("Div", [x, b.cast(n, onnx_dtype(et))])  # truncated; one less where x is negative and inexact
    r = b.op("Sub", [x, b.op("Mul", [q, b.cast(n, onnx_dtype(et))])])
    if et.numpy.kind == "i":
        neg = b.op("Less", [r, b.i64(0)])
        q = b.op("Sub", [q, b.cast(neg, oir.DataType.INT64)])
        r = b.op("Add", [r, b.op("Where", [neg, n, b.i64(0)])])
    rs = reduce_value(ctx, "ReduceSum", b.cast(r, oir.DataType.INT64))  # below n^2
    floor = b.op("Add", [b.cast(_sum64(ctx, q), oir.DataType.INT64), b.op("Div", [rs, n])])
    if et.numpy.kind == "i":  # toward zero: one more where the mean is negative and not whole
        inexact = b.op("Not", [b.op("Equal", [b.op("Mod", [rs, n]), b.i64(0)])])
        up = b.op("And", [inexact, b.op("Less", [floor, b.i64(0)])])
        floor = b.op("Add", [floor, b.cast(up, oir.DataType.INT64)])
    return b.cast(floor, onnx_dtype(et))


def _count(ctx: LayerContext) -> oir.Value:
    """The number of elements each output of the layer reduces: the product of the reduced dims (int64 scalar, at
    least 1, so that an empty sum's mean is 0)."""
    b = ctx.b
    axes = b.reshape(b.cast(ctx.inputs[1], oir.DataType.INT64), [-1])
    n = b.op("ReduceProd", [b.op("Gather", [b.shape_of(ctx.inputs[0]), axes])], {"keepdims": 0})
    return b.op("Max", [n, b.i64(1)])


def _sum64(ctx: LayerContext, x: oir.Value) -> oir.Value:
    """The sum of 64-bit integers modulo 2^64, as uint64: the 32-bit halves summed apart in int64 (exact below 2^21
    elements, as onnxruntime's int64 sums go through double) and recombined with wrapping int64 arithmetic."""
    b = ctx.b
    x = b.cast(x, oir.DataType.UINT64)  # the same bits
    n32 = b.const(np.asarray(32, np.uint64))
    high = b.op("BitShift", [x, n32], {"direction": "RIGHT"})
    low = b.op("BitShift", [b.op("BitShift", [x, n32], {"direction": "LEFT"}), n32], {"direction": "RIGHT"})
    low_sum = reduce_value(ctx, "ReduceSum", b.cast(low, oir.DataType.INT64))
    high_sum = reduce_value(ctx, "ReduceSum", b.cast(high, oir.DataType.INT64))
    return b.cast(b.op("Add", [low_sum, b.op("Mul", [high_sum, b.i64(1 << 32)])]), oir.DataType.UINT64)


def _int_prod(ctx: LayerContext, et: ElementType) -> oir.Value:
    """Integer products wrapped into the type (onnxruntime's integer ReduceProd saturates, and it has no uint64
    one): the reduced axes moved last and flattened, then halved by pairwise int64 Mul (which wraps) until one
    element is left. Needs constant axes and known reduced dims; otherwise int64 ReduceProd, exact while the
    product fits."""
    b = ctx.b
    x = b.cast(ctx.inputs[0], oir.DataType.INT64)
    axes, rank, dims = ctx.const(1), ctx.input_rank(0), ctx.input_dims(0)
    reduced = sorted({int(a) % rank for a in axes.reshape(-1)}) if axes is not None and rank else None
    if not reduced or any(dims[a] is None for a in reduced):
        return b.cast(reduce_value(ctx, "ReduceProd", x), onnx_dtype(et))
    kept = [a for a in range(rank) if a not in reduced]
    length = int(np.prod([dims[a] for a in reduced]))
    kept_dims = b.op("Gather", [b.shape_of(ctx.inputs[0]), b.i64(kept)])
    if length == 0:  # an empty product is 1
        x, length = b.op("Expand", [b.i64([1]), b.concat([kept_dims, b.i64([1])], 0)]), 1
    else:
        if kept + reduced != list(range(rank)):
            x = b.op("Transpose", [x], {"perm": kept + reduced})
        x = b.reshape(x, b.concat([kept_dims, b.i64([length])], 0), allowzero=True)
    while length > 1:
        half = length // 2
        y = b.op("Mul", [b.slice(x, [0], [half], [-1]), b.slice(x, [half], [2 * half], [-1])])
        x = b.concat([y, b.slice(x, [2 * half], [length], [-1])], -1) if length % 2 else y
        length = half + length % 2
    y = b.squeeze(x, [-1])
    if ctx.attr_bool("keep_dims", False):
        y = b.unsqueeze(y, reduced)
    return b.cast(y, onnx_dtype(et))


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
