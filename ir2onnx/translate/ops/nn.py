"""MatMul and Einsum."""

from __future__ import annotations

import onnx_ir as oir

from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.registry import converter


def _swap_last(ctx: LayerContext, x: oir.Value, rank: int) -> oir.Value:
    if rank < 2:
        return x  # OpenVINO ignores transpose flags on 1-D operands
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    return ctx.b.op("Transpose", [x], {"perm": perm})


@converter("MatMul", "opset1")
def matmul(ctx: LayerContext) -> oir.Value:
    a, b = ctx.inputs[0], ctx.inputs[1]
    if ctx.attr_bool("transpose_a", False):
        a = _swap_last(ctx, a, ctx.input_rank(0))
    if ctx.attr_bool("transpose_b", False):
        b = _swap_last(ctx, b, ctx.input_rank(1))
    if ctx.input_type(0).name == "boolean":  # OpenVINO multiplies them as numbers: true where any product is
        f32 = oir.DataType.FLOAT
        return ctx.b.cast(ctx.b.op("MatMul", [ctx.b.cast(a, f32), ctx.b.cast(b, f32)]), oir.DataType.BOOL)
    return ctx.b.op("MatMul", [a, b])


@converter("Einsum", "opset7")
def einsum(ctx: LayerContext) -> oir.Value:
    return ctx.b.op("Einsum", ctx.inputs, {"equation": ctx.attr_str("equation")})
