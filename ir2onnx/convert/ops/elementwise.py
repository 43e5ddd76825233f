"""Element-wise arithmetic, comparison and logical ops with OpenVINO's broadcast modes."""

from __future__ import annotations

import onnx_ir as ir

from ir2onnx.convert.context import LayerContext
from ir2onnx.convert.registry import converter


def broadcast_inputs(ctx: LayerContext, a: ir.Value, b: ir.Value) -> tuple[ir.Value, ir.Value]:
    """Apply `auto_broadcast`: numpy/none map to ONNX's multidirectional broadcast; pdpd aligns b at `axis`."""
    mode = ctx.attr_str("auto_broadcast", "numpy").lower()
    if mode in ("numpy", "none", "explicit"):
        return a, b
    if mode == "pdpd":
        axis = ctx.attr_int("axis", -1)
        ra, rb = ctx.input_rank(0), ctx.input_rank(1)
        if axis == -1:
            axis = ra - rb
        trailing = ra - axis - rb
        if trailing > 0:
            b = ctx.b.unsqueeze(b, list(range(rb, rb + trailing)))
        return a, b
    raise ctx.error(f"auto_broadcast='{mode}' is not supported")


def _binary(onnx_op: str):  # type: ignore[no-untyped-def]
    def convert(ctx: LayerContext) -> ir.Value:
        a, b = broadcast_inputs(ctx, ctx.inputs[0], ctx.inputs[1])
        return ctx.b.op(onnx_op, [a, b])

    return convert


for _ir_type, _onnx_op in (("Add", "Add"), ("Multiply", "Mul"), ("Subtract", "Sub")):
    converter(_ir_type, "opset1")(_binary(_onnx_op))
