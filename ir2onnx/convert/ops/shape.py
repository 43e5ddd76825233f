"""Type conversion and shape manipulation."""

from __future__ import annotations

import onnx_ir as ir

from ir2onnx.convert.builder import onnx_dtype
from ir2onnx.convert.context import LayerContext, set_value_type
from ir2onnx.convert.registry import converter


@converter("Convert", "opset1")
def convert(ctx: LayerContext) -> ir.Value:
    et = ctx.attr_type("destination_type")
    out = ctx.b.cast(ctx.inputs[0], onnx_dtype(et))
    set_value_type(out, et)
    return out


@converter("ConvertLike", "opset1")
def convert_like(ctx: LayerContext) -> ir.Value:
    et = ctx.input_type(1)
    out = ctx.b.cast(ctx.inputs[0], onnx_dtype(et))
    set_value_type(out, et)
    return out


def _axes(ctx: LayerContext, i: int) -> ir.Value:
    """An axes/shape input as 1-D int64 (folded when constant)."""
    c = ctx.const(i)
    if c is not None:
        return ctx.b.i64([int(v) for v in c.reshape(-1)])
    return ctx.b.reshape(ctx.b.cast(ctx.inputs[i], ir.DataType.INT64), [-1])


@converter("Squeeze", "opset1")
def squeeze(ctx: LayerContext) -> ir.Value:
    if len(ctx.inputs) < 2:
        return ctx.b.op("Squeeze", [ctx.inputs[0]])
    return ctx.b.op("Squeeze", [ctx.inputs[0], _axes(ctx, 1)])


@converter("Unsqueeze", "opset1")
def unsqueeze(ctx: LayerContext) -> ir.Value:
    return ctx.b.op("Unsqueeze", [ctx.inputs[0], _axes(ctx, 1)])


@converter("Reshape", "opset1")
def reshape(ctx: LayerContext) -> ir.Value:
    """special_zero=true: 0 copies the input dim (ONNX allowzero=0); false: 0 is a zero dim (allowzero=1)."""
    special_zero = ctx.attr_bool("special_zero", False)
    return ctx.b.reshape(ctx.inputs[0], _axes(ctx, 1), allowzero=not special_zero)


@converter("Concat", "opset1")
def concat(ctx: LayerContext) -> ir.Value:
    return ctx.b.op("Concat", ctx.inputs, {"axis": ctx.attr_int("axis")})


@converter("ShapeOf", "opset1", "opset3")
def shape_of(ctx: LayerContext) -> ir.Value:
    out = ctx.b.shape_of(ctx.inputs[0])
    et = ctx.output_type(0)
    return out if et.name == "i64" else ctx.b.cast(out, onnx_dtype(et))


@converter("Transpose", "opset1")
def transpose(ctx: LayerContext) -> ir.Value:
    perm = ctx.require_const(1, "the permutation")
    order = [int(p) for p in perm.reshape(-1)]
    rank = ctx.input_rank(0)
    if not order:
        order = list(range(rank - 1, -1, -1))
    return ctx.b.op("Transpose", [ctx.inputs[0]], {"perm": [p % rank for p in order]})


@converter("Identity", "opset16")
def identity(ctx: LayerContext) -> ir.Value:
    return ctx.b.op("Identity", [ctx.inputs[0]])


@converter("Range", "opset1", "opset4")
def range_(ctx: LayerContext) -> ir.Value:
    """Scalars start/stop/step in the output type (opset4 `output_type`; opset1 follows the inputs)."""
    et = ctx.output_type(0)
    args = [ctx.b.reshape(ctx.b.cast(v, onnx_dtype(et)), []) for v in ctx.inputs[:3]]
    out = ctx.b.op("Range", args)
    set_value_type(out, et)
    return out
