"""Normalizations: BatchNormInference, MVN (1 and 6), NormalizeL2, GroupNormalization, LRN."""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.ops.precision import in_f32_rounded
from ir2onnx.translate.registry import converter


@converter("BatchNormInference", "opset1", "opset5")
def batch_norm(ctx: LayerContext) -> oir.Value:
    """opset1 inputs are (gamma, beta, data, mean, variance); opset5 puts data first, like ONNX."""
    if ctx.version == 1:
        gamma, beta, x, mean, var = ctx.inputs[:5]
    else:
        x, gamma, beta, mean, var = ctx.inputs[:5]
    return ctx.b.op("BatchNormalization", [x, gamma, beta, mean, var], {"epsilon": ctx.attr_float("epsilon")})


@converter("MVN", "opset6")
@in_f32_rounded
def mvn(ctx: LayerContext) -> oir.Value:
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
@in_f32_rounded
def normalize_l2(ctx: LayerContext) -> oir.Value:
    """x / sqrt(max(sum(x^2), eps)) (eps_mode max) or x / sqrt(sum(x^2) + eps) (add)."""
    b, x = ctx.b, ctx.inputs[0]
    dt = ctx.input_type(0).numpy
    axes = ctx.ints_or_value(1)
    sq = b.reduce("ReduceSum", b.op("Mul", [x, x]), axes, True)
    eps = b.const(np.asarray(ctx.attr_float("eps"), dtype=dt))
    sq = b.op("Max", [sq, eps]) if ctx.attr_str("eps_mode", "add").lower() == "max" else b.op("Add", [sq, eps])
    return b.op("Div", [x, b.op("Sqrt", [sq])])


@converter("MVN", "opset2")
def mvn2(ctx: LayerContext) -> oir.Value:
    """MVN-1 (stored as opset2; the reader takes opset1 MVN here too): over reduction_axes when written, else all
    axes from 1 (across_channels) or from 2; eps inside the square root."""
    b, x = ctx.b, ctx.inputs[0]
    rank = ctx.input_rank(0)
    axes = ctx.attr_ints("reduction_axes", [])
    if not axes:
        axes = list(range(1 if ctx.attr_bool("across_channels", False) else 2, rank))
    axes = [a % rank for a in axes]
    centered = b.op("Sub", [x, b.reduce("ReduceMean", x, axes, True)])
    if not ctx.attr_bool("normalize_variance", True):
        return centered
    var = b.reduce("ReduceMean", b.op("Mul", [centered, centered]), axes, True)
    eps = b.const(np.asarray(ctx.attr_float("eps"), ctx.input_type(0).numpy))
    return b.op("Div", [centered, b.op("Sqrt", [b.op("Add", [var, eps])])])


@converter("GroupNormalization", "opset12")
def group_normalization(ctx: LayerContext) -> oir.Value:
    """Mean and variance per (batch, group) over the group's channels and every spatial element, then per-channel
    scale and bias (composed: ONNX GroupNormalization-18 scales per group, and onnxruntime lacks -21 below 21)."""
    b, x = ctx.b, ctx.inputs[0]
    rank = ctx.input_rank(0)
    groups = ctx.attr_int("num_groups")
    dt = ctx.input_type(0).numpy
    grouped = b.reshape(x, b.concat([b.shape_of(x, 0, 1), b.i64([groups, -1])], 0))
    centered = b.op("Sub", [grouped, b.reduce("ReduceMean", grouped, [2], True)])
    var = b.reduce("ReduceMean", b.op("Mul", [centered, centered]), [2], True)
    eps = b.const(np.asarray(ctx.attr_float("epsilon"), dt))
    normed = b.reshape(b.op("Div", [centered, b.op("Sqrt", [b.op("Add", [var, eps])])]), b.shape_of(x))
    per_channel = [-1] + [1] * (rank - 2)
    scale = b.reshape(ctx.inputs[1], per_channel)
    bias = b.reshape(ctx.inputs[2], per_channel)
    return b.op("Add", [b.op("Mul", [normed, scale]), bias])


@converter("LRN", "opset1")
def lrn(ctx: LayerContext) -> oir.Value:
    """x / (bias + alpha / size^n * sum of squares over a window of the axes)^beta, the window being
    i - (size-1)//2 .. i + (size-1)//2 along each of the n axes (symmetric: one element short of `size` when
    size is even). Channel-only with odd size is ONNX LRN; otherwise an AveragePool of the squares over the axes."""
    b, x = ctx.b, ctx.inputs[0]
    rank = ctx.input_rank(0)
    axes = sorted({int(a) % rank for a in ctx.require_const(1, "the axes (the pooling window needs them)").reshape(-1)})
    alpha, beta = ctx.attr_float("alpha"), ctx.attr_float("beta")
    bias, size = ctx.attr_float("bias"), ctx.attr_count("size")
    et = ctx.input_type(0)
    if axes == [1] and size % 2 == 1 and et.name == "f32" and rank == 4:  # onnxruntime: 4-D only
        return b.op("LRN", [x], {"alpha": alpha, "beta": beta, "bias": bias, "size": size})
    half = (size - 1) // 2
    window = 2 * half + 1
    others = [a for a in range(rank) if a not in axes]
    perm = others + axes
    sq = b.op("Mul", [x, x])
    moved = b.op("Transpose", [sq], {"perm": perm}) if perm != list(range(rank)) else sq
    pooled_in = b.reshape(moved, b.concat([b.i64([-1, 1]), b.shape_of(moved, len(others))], 0))
    avg = b.op("AveragePool", [pooled_in], {"kernel_shape": [window] * len(axes), "pads": [half] * (2 * len(axes)),
                                           "count_include_pad": 1})
    avg = b.reshape(avg, b.shape_of(moved))
    if perm != list(range(rank)):
        inv = [perm.index(a) for a in range(rank)]
        avg = b.op("Transpose", [avg], {"perm": inv})
    coef = alpha * window ** len(axes) / size ** len(axes)  # avg * window^n = the window's sum
    denom = b.op("Pow", [b.op("Add", [b.op("Mul", [avg, b.const(np.asarray(coef, et.numpy))]),
                                      b.const(np.asarray(bias, et.numpy))]), b.const(np.asarray(beta, et.numpy))])
    return b.op("Div", [x, denom])
