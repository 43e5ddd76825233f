"""Element-wise math without a one-node ONNX twin for every type: NaN/Inf tests, GRN, Eye, ConvertPromoteTypes
(the inverse hyperbolics are unary float functions: elementwise.py)."""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import onnx_dtype
from ir2onnx.translate.context import LayerContext, set_value_type
from ir2onnx.translate.ops.precision import to_output_type, wide_input
from ir2onnx.translate.registry import converter


# f16/bf16 are tested in f32 (exact); f64 stays f64 (1e300 is finite).
@converter("IsNaN", "opset10")
def is_nan(ctx: LayerContext) -> oir.Value:
    return ctx.b.op("IsNaN", [wide_input(ctx, 0)])


@converter("IsInf", "opset10")
def is_inf(ctx: LayerContext) -> oir.Value:
    neg, pos = ctx.attr_bool("detect_negative", True), ctx.attr_bool("detect_positive", True)
    return ctx.b.op("IsInf", [wide_input(ctx, 0)], {"detect_negative": int(neg), "detect_positive": int(pos)})


@converter("IsFinite", "opset10")
def is_finite(ctx: LayerContext) -> oir.Value:
    x = wide_input(ctx, 0)
    return ctx.b.op("Not", [ctx.b.op("Or", [ctx.b.op("IsNaN", [x]), ctx.b.op("IsInf", [x])])])


@converter("GRN", "opset1")
def grn(ctx: LayerContext) -> oir.Value:
    """x / sqrt(sum over axis 1 of x^2 + bias)."""
    b, x = ctx.b, wide_input(ctx, 0)
    ss = b.reduce("ReduceSumSquare", x, [1], keepdims=True)
    bias = b.op("CastLike", [b.const(ctx.attr_float("bias"), np.float32), x])
    return to_output_type(ctx, b.op("Div", [x, b.op("Sqrt", [b.op("Add", [ss, bias])])]))


def _scalar_i64(ctx: LayerContext, i: int) -> oir.Value:
    """A scalar (or 1-element) integer input as an int64 scalar."""
    c = ctx.const(i)
    if c is not None:
        return ctx.b.const(int(c.reshape(-1)[0]), np.int64)
    v = ctx.inputs[i]
    if ctx.input_type(i).name != "i64":
        v = ctx.b.cast(v, oir.DataType.INT64)
    return ctx.b.reshape(v, [])


@converter("Eye", "opset9")
def eye(ctx: LayerContext) -> oir.Value:
    """Ones where column - row == diagonal_index (any shift, in or out of range), broadcast over batch_shape."""
    b = ctx.b
    rows, cols, diag = _scalar_i64(ctx, 0), _scalar_i64(ctx, 1), _scalar_i64(ctx, 2)
    zero, one = b.const(0, np.int64), b.const(1, np.int64)
    r = b.unsqueeze(b.op("Range", [zero, rows, one]), [1])
    c = b.unsqueeze(b.op("Range", [zero, cols, one]), [0])
    et = ctx.output_type(0)
    out = b.cast(b.op("Equal", [b.op("Sub", [c, r]), diag]), onnx_dtype(et))
    if len(ctx.inputs) > 3:
        batch = ctx.const(3)
        bs = b.i64([int(v) for v in batch.reshape(-1)]) if batch is not None else \
            b.cast(b.reshape(ctx.inputs[3], [-1]), oir.DataType.INT64)
        out = b.op("Expand", [out, b.concat([bs, b.unsqueeze(rows, [0]), b.unsqueeze(cols, [0])], 0)])
    set_value_type(out, et)
    return out


@converter("ConvertPromoteTypes", "opset14")
def convert_promote_types(ctx: LayerContext) -> list[oir.Value]:
    """Both inputs cast to the promoted type. The promotion is decided when the IR is made (from element types
    and the attributes) and recorded on the output ports, so the casts follow those ports."""
    outs = []
    for i in range(2):
        et = ctx.output_type(i)
        v = ctx.inputs[i] if ctx.input_type(i) == et else ctx.b.cast(ctx.inputs[i], onnx_dtype(et))
        set_value_type(v, et)
        outs.append(v)
    return outs
