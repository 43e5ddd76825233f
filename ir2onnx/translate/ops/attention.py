"""ScaledDotProductAttention as MatMul, scale, mask, Softmax, MatMul (OpenVINO's specification pseudo-code)."""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.ops.precision import to_output_type, wide_input
from ir2onnx.translate.registry import converter


@converter("ScaledDotProductAttention", "opset13")
def scaled_dot_product_attention(ctx: LayerContext) -> oir.Value:
    """softmax(Q K^T * scale + bias) V over the last axis; batch dims broadcast as MatMul does.

    scale: input 4, else 1 / sqrt(E) in the query's type. bias: with `causal`, -inf where column > row (the [L, S]
    matrix aligned at the top left; the mask input is ignored); a boolean mask keeps the True positions and puts
    -inf elsewhere; any other mask is added. A row with nothing kept is NaN, as in OpenVINO."""
    b = ctx.b
    q, k, v = (wide_input(ctx, i) for i in range(3))
    krank = ctx.input_rank(1)
    perm = list(range(krank - 2)) + [krank - 1, krank - 2]
    scores = b.op("MatMul", [q, b.op("Transpose", [k], {"perm": perm})])
    scores = b.op("Mul", [scores, _scale(ctx, q)])
    has_mask = len(ctx.inputs) > 3 and ctx.inputs[3] is not None
    neg_inf = b.op("CastLike", [b.const(-np.inf, np.float32), q])
    if ctx.attr_bool("causal", False):
        zero, one = b.i64(0), b.i64(1)
        rows = b.unsqueeze(b.op("Range", [zero, b.reshape(b.shape_of(q, -2, -1), []), one]), [1])
        cols = b.unsqueeze(b.op("Range", [zero, b.reshape(b.shape_of(k, -2, -1), []), one]), [0])
        scores = b.op("Where", [b.op("Greater", [cols, rows]), neg_inf, scores])
    elif has_mask:
        if ctx.input_type(3).name == "boolean":
            scores = b.op("Where", [ctx.inputs[3], scores, neg_inf])
        else:
            scores = b.op("Add", [scores, wide_input(ctx, 3)])
    weights = b.op("Softmax", [scores], {"axis": -1})
    return to_output_type(ctx, b.op("MatMul", [weights, v]))


def _scale(ctx: LayerContext, q: oir.Value) -> oir.Value:
    """Input 4, else 1 / sqrt(E) from the query's run-time shape (dims inside bodies may be stale)."""
    b = ctx.b
    if len(ctx.inputs) > 4 and ctx.inputs[4] is not None:
        return wide_input(ctx, 4)
    e = b.op("CastLike", [b.shape_of(q, -1), q])
    return b.op("Reciprocal", [b.op("Sqrt", [e])])
