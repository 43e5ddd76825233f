"""Activations and softmax (Sigmoid and Tanh, one ONNX op on floats, are unary float functions: elementwise.py)."""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.ops.precision import (
    float_function,
    in_f32,
    in_f32_rounded,
    saturating,
    to_output_type,
    wide_input,
)
from ir2onnx.translate.registry import converter, register_made


def _unary(onnx_op: str):  # type: ignore[no-untyped-def]
    def convert(ctx: LayerContext) -> oir.Value:
        return ctx.b.op(onnx_op, [ctx.inputs[0]])

    return convert


@converter("Relu", "opset1")
def relu(ctx: LayerContext) -> oir.Value:
    """Integers: max(x, 0) (ONNX Relu takes floats and a few signed types); unsigned values are their own Relu."""
    et = ctx.input_type(0)
    if et.is_float:
        return ctx.b.op("Relu", [ctx.inputs[0]])
    if et.numpy.kind == "u":
        return ctx.b.identity(ctx.inputs[0])
    return ctx.b.op("Max", [ctx.inputs[0], ctx.b.const(0, et.numpy)])


@converter("Clamp", "opset1")
def clamp(ctx: LayerContext) -> oir.Value:
    """Clip with bounds in the input's type (integer inputs: OpenVINO rounds min up and max down)."""
    dt = ctx.input_type(0).numpy
    lo, hi = ctx.attr_float("min"), ctx.attr_float("max")
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = max(np.ceil(lo), info.min), min(np.floor(hi), info.max)
    return ctx.b.op("Clip", [ctx.inputs[0], ctx.b.const(lo, dt), ctx.b.const(hi, dt)])


@converter("SoftMax", "opset1", "opset8")
@in_f32_rounded
def softmax(ctx: LayerContext) -> oir.Value:
    return ctx.b.op("Softmax", [ctx.inputs[0]], {"axis": ctx.attr_axis("axis", ctx.input_rank(0), 1)})


@converter("LogSoftmax", "opset5")
@in_f32_rounded
def log_softmax(ctx: LayerContext) -> oir.Value:
    return ctx.b.op("LogSoftmax", [ctx.inputs[0]], {"axis": ctx.attr_axis("axis", ctx.input_rank(0), 1)})


for _ir_type, _onnx_op, _opset in (("SoftPlus", "Softplus", "opset4"), ("SoftSign", "Softsign", "opset9")):
    register_made(_unary(_onnx_op), _ir_type, _opset)


@converter("HSwish", "opset4")
def hswish(ctx: LayerContext) -> oir.Value:
    """ONNX HardSwish; onnxruntime expands it into HardSigmoid, which it runs in f32 only: other float types are
    computed in f32 (as OpenVINO's CPU plugin computes them)."""
    et = ctx.input_type(0)
    if et.name == "f64":
        y = ctx.b.op("HardSwish", [ctx.b.cast(ctx.inputs[0], oir.DataType.FLOAT)])
        return ctx.b.cast(y, oir.DataType.DOUBLE)
    return float_function(ctx, ctx.inputs[0], et, lambda x: ctx.b.op("HardSwish", [x]))


@converter("Mish", "opset4")
@in_f32
def mish(ctx: LayerContext) -> oir.Value:
    """x * tanh(softplus(x)) (ONNX Mish needs opset 18)."""
    x = ctx.inputs[0]
    return ctx.b.op("Mul", [x, ctx.b.op("Tanh", [ctx.b.op("Softplus", [x])])])


@converter("Elu", "opset1")
@in_f32_rounded
def elu(ctx: LayerContext) -> oir.Value:
    return ctx.b.op("Elu", [ctx.inputs[0]], {"alpha": ctx.attr_float("alpha")})


@converter("HSigmoid", "opset5")
@in_f32_rounded
def hsigmoid(ctx: LayerContext) -> oir.Value:
    """OpenVINO: min(max(x + 3, 0), 6) / 6, i.e. ONNX HardSigmoid with alpha 1/6, beta 0.5."""
    return ctx.b.op("HardSigmoid", [ctx.inputs[0]], {"alpha": 1.0 / 6.0, "beta": 0.5})


@converter("Swish", "opset4")
@in_f32
def swish(ctx: LayerContext) -> oir.Value:
    """x * sigmoid(beta * x), beta = 1 when the input is absent."""
    x = ctx.inputs[0]
    z = ctx.b.op("Mul", [x, ctx.inputs[1]]) if len(ctx.inputs) > 1 else x
    return ctx.b.op("Mul", [x, ctx.b.op("Sigmoid", [z])])


@converter("Gelu", "opset2", "opset7")
@in_f32
def gelu(ctx: LayerContext) -> oir.Value:
    """erf form 0.5 x (1 + erf(x / sqrt 2)); tanh form with the cubic term (opset7 approximation_mode=tanh)."""
    b, x = ctx.b, ctx.inputs[0]
    dt = ctx.input_type(0).numpy
    if ctx.attr_str("approximation_mode", "erf").lower() == "tanh":
        inner = b.op("Mul", [b.const(np.sqrt(2 / np.pi), dt),
                             b.op("Add", [x, b.op("Mul", [b.const(0.044715, dt), b.op("Mul", [x, b.op("Mul", [x, x])])])])])
        t = b.op("Tanh", [inner])
    else:
        t = b.op("Erf", [b.op("Div", [x, b.const(np.sqrt(2.0), dt)])])
    return b.op("Mul", [b.op("Mul", [x, b.const(0.5, dt)]), b.op("Add", [t, b.const(1.0, dt)])])


def scalar_input(ctx: LayerContext, i: int) -> oir.Value:
    """A scalar parameter input ([] or [1]) as a scalar (so it broadcasts without raising the data's rank), in the
    type wide_input gives."""
    c = ctx.const(i)
    if c is not None:
        return ctx.b.const(c.reshape(()), c.dtype if c.dtype in (np.float32, np.float64) else np.float32)
    return ctx.b.reshape(wide_input(ctx, i), [])


@converter("HardSigmoid", "opset1")
def hard_sigmoid(ctx: LayerContext) -> oir.Value:
    """max(0, min(1, alpha * x + beta)) with alpha and beta as inputs (constant or not)."""
    b, x = ctx.b, wide_input(ctx, 0)
    y = b.op("Add", [b.op("Mul", [x, scalar_input(ctx, 1)]), scalar_input(ctx, 2)])
    zero, one = (b.op("CastLike", [b.const(v, np.float32), x]) for v in (0.0, 1.0))
    return to_output_type(ctx, b.op("Max", [b.op("Min", [y, one]), zero]))


@converter("Selu", "opset1")
def selu(ctx: LayerContext) -> oir.Value:
    """lambda * (x if x > 0 else alpha * exp(x) - alpha) with alpha and lambda as inputs."""
    b, x = ctx.b, wide_input(ctx, 0)
    alpha, lam = scalar_input(ctx, 1), scalar_input(ctx, 2)
    neg = b.op("Sub", [b.op("Mul", [alpha, b.op("Exp", [x])]), alpha])
    pos = b.op("Greater", [x, b.op("CastLike", [b.const(0.0, np.float32), x])])
    return to_output_type(ctx, b.op("Mul", [lam, b.op("Where", [pos, x, neg])]))


@converter("PRelu", "opset1")
def prelu(ctx: LayerContext) -> oir.Value:
    """A 1-D slope whose length equals the data's dim 1 (dim 0 for 1-D data) applies per channel along that dim;
    any other slope broadcasts numpy-style (aligned with the last dims), as OpenVINO does. When the dims are
    unknown at conversion time the choice is made at run time."""
    b, x, slope = ctx.b, ctx.inputs[0], ctx.inputs[1]
    rank, srank = ctx.input_rank(0), ctx.input_rank(1)
    if srank != 1 or rank <= 2:  # per-channel and numpy broadcasting agree
        return _prelu(ctx, x, slope, rank, srank)
    channels, length = ctx.input_dims(0)[1], ctx.input_dims(1)[0]
    if channels is not None and length is not None:
        if channels == length:
            slope = b.unsqueeze(slope, list(range(1, rank - 1)))
        return _prelu(ctx, x, slope, rank, rank if channels == length else 1)
    n = b.shape_of(slope)
    ones = b.i64([1] * (rank - 2))
    per_channel = b.concat([b.i64([1]), n, ones], 0)
    numpy_like = b.concat([b.i64([1]), ones, n], 0)
    same = b.op("Equal", [b.shape_of(x, 1, 2), n])
    slope = b.reshape(slope, b.op("Where", [same, per_channel, numpy_like]))
    return _prelu(ctx, x, slope, rank, rank)


def _prelu(ctx: LayerContext, x: oir.Value, slope: oir.Value, rank: int, srank: int) -> oir.Value:
    """ONNX PRelu needs a slope unidirectionally broadcastable to x and a float, int32 or int64 type; a slope of
    higher rank (OpenVINO broadcasts both ways) or another type takes the Where form."""
    b = ctx.b
    if srank <= rank and ctx.input_type(0).name in ("f32", "f64", "f16", "i32", "i64"):
        return b.op("PRelu", [x, slope])
    et = ctx.input_type(0)
    if et.name == "boolean":  # never negative: x, broadcast both ways with the slope as OpenVINO does
        return b.op("Expand", [x, b.shape_of(slope)])
    zero = b.const(0, et.numpy)
    scaled = saturating(ctx, et, [x, slope], lambda xs: b.op("Mul", xs))
    return b.op("Where", [b.op("Less", [x, zero]), scaled, x])
