"""Reductions (keep_dims; axes constant, or at run time from opset 18)."""

from __future__ import annotations

import onnx_ir as ir

from ir2onnx.convert.context import LayerContext
from ir2onnx.convert.registry import converter


def _reduce(onnx_op: str):  # type: ignore[no-untyped-def]
    def convert(ctx: LayerContext) -> ir.Value:
        keep = ctx.attr_bool("keep_dims", False)
        axes = ctx.const(1)
        if axes is not None:
            axes_list = [int(a) for a in axes.reshape(-1)]
            if not axes_list:  # OpenVINO: empty axes reduce nothing
                return ctx.b.op("Identity", [ctx.inputs[0]])
            return ctx.b.reduce(onnx_op, ctx.inputs[0], axes_list, keep)
        if ctx.opset < 18 and onnx_op != "ReduceSum":
            raise ctx.error(f"{ctx.layer.type} with run-time axes needs --opset 18 or newer")
        ax = ctx.b.reshape(ctx.b.cast(ctx.inputs[1], ir.DataType.INT64), [-1])
        return ctx.b.reduce(onnx_op, ctx.inputs[0], ax, keep, noop_with_empty_axes=True)

    return convert


for _ir_type, _onnx_op in (
    ("ReduceSum", "ReduceSum"), ("ReduceMean", "ReduceMean"), ("ReduceMax", "ReduceMax"), ("ReduceMin", "ReduceMin"),
    ("ReduceProd", "ReduceProd"),
):
    converter(_ir_type, "opset1")(_reduce(_onnx_op))


for _ir_type, _onnx_op, _opset in (("ReduceL1", "ReduceL1", "opset4"), ("ReduceL2", "ReduceL2", "opset4")):
    converter(_ir_type, _opset)(_reduce(_onnx_op))


def _logical(onnx_op: str):  # type: ignore[no-untyped-def]
    """Boolean reductions through uint8 ReduceMin/ReduceMax (ONNX reductions take no booleans)."""
    numeric = _reduce(onnx_op)

    def convert(ctx: LayerContext) -> ir.Value:
        x = ctx.b.cast(ctx.inputs[0], ir.DataType.UINT8)
        ctx.inputs[0] = x
        return ctx.b.cast(numeric(ctx), ir.DataType.BOOL)

    return convert


converter("ReduceLogicalAnd", "opset1")(_logical("ReduceMin"))
converter("ReduceLogicalOr", "opset1")(_logical("ReduceMax"))
