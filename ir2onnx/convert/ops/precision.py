"""Compositions on f16/bf16 data compute in f32 between casts, as OpenVINO does at f32 inference precision (one
rounding at the end instead of one per ONNX node)."""

from __future__ import annotations

import onnx_ir as ir

from ir2onnx.convert.builder import onnx_dtype
from ir2onnx.convert.context import LayerContext

_WIDE = ("f32", "f64")


def wide_input(ctx: LayerContext, i: int) -> ir.Value:
    """Input i as is when f32/f64, else cast to f32."""
    x = ctx.inputs[i]
    return x if ctx.input_type(i).name in _WIDE else ctx.b.cast(x, ir.DataType.FLOAT)


def f32_input(ctx: LayerContext, i: int) -> ir.Value:
    """Input i in f32 (for ONNX ops that onnxruntime runs in f32 only)."""
    x = ctx.inputs[i]
    return x if ctx.input_type(i).name == "f32" else ctx.b.cast(x, ir.DataType.FLOAT)


def to_output_type(ctx: LayerContext, y: ir.Value, port: int = 0) -> ir.Value:
    """`y` (computed by wide_input's rule) cast back to output `port`'s type where that is narrower."""
    et = ctx.output_type(port)
    return y if et.name in _WIDE else ctx.b.cast(y, onnx_dtype(et))
