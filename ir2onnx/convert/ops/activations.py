"""Activations and softmax."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from ir2onnx.convert.context import LayerContext
from ir2onnx.convert.registry import converter


def _unary(onnx_op: str):  # type: ignore[no-untyped-def]
    def convert(ctx: LayerContext) -> ir.Value:
        return ctx.b.op(onnx_op, [ctx.inputs[0]])

    return convert


for _ir_type, _onnx_op in (("Sigmoid", "Sigmoid"), ("Tanh", "Tanh"), ("Relu", "Relu")):
    converter(_ir_type, "opset1")(_unary(_onnx_op))


@converter("Clamp", "opset1")
def clamp(ctx: LayerContext) -> ir.Value:
    """Clip with bounds in the input's type (integer inputs: OpenVINO rounds min up and max down)."""
    dt = ctx.input_type(0).numpy
    lo, hi = ctx.attr_float("min"), ctx.attr_float("max")
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = max(np.ceil(lo), info.min), min(np.floor(hi), info.max)
    return ctx.b.op("Clip", [ctx.inputs[0], ctx.b.const(lo, dt), ctx.b.const(hi, dt)])


@converter("SoftMax", "opset1", "opset8")
def softmax(ctx: LayerContext) -> ir.Value:
    return ctx.b.op("Softmax", [ctx.inputs[0]], {"axis": ctx.attr_int("axis", 1)})


@converter("LogSoftmax", "opset5")
def log_softmax(ctx: LayerContext) -> ir.Value:
    return ctx.b.op("LogSoftmax", [ctx.inputs[0]], {"axis": ctx.attr_int("axis", 1)})
