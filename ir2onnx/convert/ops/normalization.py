"""Normalizations: BatchNormInference, MVN, NormalizeL2."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from ir2onnx.convert.context import LayerContext
from ir2onnx.convert.ops.precision import in_f32
from ir2onnx.convert.registry import converter


@converter("BatchNormInference", "opset1", "opset5")
def batch_norm(ctx: LayerContext) -> ir.Value:
    """opset1 inputs are (gamma, beta, data, mean, variance); opset5 puts data first, like ONNX."""
    if ctx.layer.version in ("opset1", ""):
        gamma, beta, x, mean, var = ctx.inputs[:5]
    else:
        x, gamma, beta, mean, var = ctx.inputs[:5]
    return ctx.b.op("BatchNormalization", [x, gamma, beta, mean, var], {"epsilon": ctx.attr_float("epsilon")})


@converter("MVN", "opset6")
@in_f32
def mvn(ctx: LayerContext) -> ir.Value:
    """(x - mean) / f(var, eps) over the axes input; eps_mode inside_sqrt or outside_sqrt."""
    b, x = ctx.b, ctx.inputs[0]
    dt = ctx.input_type(0).numpy
    axes = ctx.ints_or_value(1)
    centered = b.op("Sub", [x, b.reduce("ReduceMean", x, axes, True)])
    if not ctx.attr_bool("normalize_variance", True):
        return centered
    eps = b.const(ctx.attr_float("eps"), dt)
    var = b.reduce("ReduceMean", b.op("Mul", [centered, centered]), axes, True)
    if ctx.attr_str("eps_mode", "inside_sqrt").lower() == "inside_sqrt":
        denom = b.op("Sqrt", [b.op("Add", [var, eps])])
    else:
        denom = b.op("Add", [b.op("Sqrt", [var]), eps])
    return b.op("Div", [centered, denom])


@converter("NormalizeL2", "opset1")
@in_f32
def normalize_l2(ctx: LayerContext) -> ir.Value:
    """x / sqrt(max(sum(x^2), eps)) (eps_mode max) or x / sqrt(sum(x^2) + eps) (add)."""
    b, x = ctx.b, ctx.inputs[0]
    dt = ctx.input_type(0).numpy
    axes = ctx.ints_or_value(1)
    sq = b.reduce("ReduceSum", b.op("Mul", [x, x]), axes, True)
    eps = b.const(np.asarray(ctx.attr_float("eps"), dtype=dt))
    sq = b.op("Max", [sq, eps]) if ctx.attr_str("eps_mode", "add").lower() == "max" else b.op("Add", [sq, eps])
    return b.op("Div", [x, b.op("Sqrt", [sq])])
