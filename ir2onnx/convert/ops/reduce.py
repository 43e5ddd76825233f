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
