"""Reductions (keep_dims; axes constant, or at run time from opset 18 — ReduceSum from 13)."""

from __future__ import annotations

import onnx_ir as ir

from ir2onnx.convert.builder import onnx_dtype
from ir2onnx.convert.context import LayerContext
from ir2onnx.convert.registry import converter


def reduce_value(ctx: LayerContext, onnx_op: str, x: ir.Value) -> ir.Value:
    """Reduce x over the layer's axes input; OpenVINO's empty axes reduce nothing."""
    keep = ctx.attr_bool("keep_dims", False)
    axes = ctx.const(1)
    if axes is not None:
        axes_list = [int(a) for a in axes.reshape(-1)]
        if not axes_list:
            return ctx.b.op("Identity", [x])
        return ctx.b.reduce(onnx_op, x, axes_list, keep)
    ax = ctx.b.reshape(ctx.b.cast(ctx.inputs[1], ir.DataType.INT64), [-1])
    return ctx.b.reduce(onnx_op, x, ax, keep, noop_with_empty_axes=True)


def _reduce(onnx_op: str):  # type: ignore[no-untyped-def]
    def convert(ctx: LayerContext) -> ir.Value:
        et = ctx.input_type(0)
        if onnx_op == "ReduceSum" and et.numpy.kind in "iu" and et.bits <= 32:
            # summed in int64 and wrapped back, as OpenVINO wraps (onnxruntime's int32 sum does not)
            y = reduce_value(ctx, onnx_op, ctx.b.cast(ctx.inputs[0], ir.DataType.INT64))
            return ctx.b.cast(y, onnx_dtype(et))
        return reduce_value(ctx, onnx_op, ctx.inputs[0])

    return convert


def _logical(onnx_op: str):  # type: ignore[no-untyped-def]
    """Boolean reductions through uint8 ReduceMin/ReduceMax (ONNX reductions take no booleans)."""

    def convert(ctx: LayerContext) -> ir.Value:
        return ctx.b.cast(reduce_value(ctx, onnx_op, ctx.b.cast(ctx.inputs[0], ir.DataType.UINT8)), ir.DataType.BOOL)

    return convert


for _ir_type, _onnx_op, _opset in (
    ("ReduceSum", "ReduceSum", "opset1"), ("ReduceMean", "ReduceMean", "opset1"), ("ReduceMax", "ReduceMax", "opset1"),
    ("ReduceMin", "ReduceMin", "opset1"), ("ReduceProd", "ReduceProd", "opset1"), ("ReduceL1", "ReduceL1", "opset4"),
    ("ReduceL2", "ReduceL2", "opset4"),
):
    converter(_ir_type, _opset)(_reduce(_onnx_op))

converter("ReduceLogicalAnd", "opset1")(_logical("ReduceMin"))
converter("ReduceLogicalOr", "opset1")(_logical("ReduceMax"))
