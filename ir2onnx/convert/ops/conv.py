"""Convolutions: Convolution, GroupConvolution, ConvolutionBackpropData."""

from __future__ import annotations

import onnx_ir as ir

from ir2onnx.convert.context import LayerContext
from ir2onnx.convert.registry import converter

_AUTO_PAD = {"same_upper": "SAME_UPPER", "same_lower": "SAME_LOWER", "valid": "VALID"}


def _window_attrs(ctx: LayerContext, spatial: int, with_dilations: bool = True) -> dict[str, object]:
    """strides/dilations/pads/auto_pad: explicit pads are begins then ends; auto_pad modes map by name."""
    attrs: dict[str, object] = {"strides": ctx.attr_ints("strides", [1] * spatial)}
    if with_dilations:
        attrs["dilations"] = ctx.attr_ints("dilations", [1] * spatial)
    auto = ctx.attr_str("auto_pad", "explicit").lower()
    if auto in _AUTO_PAD:
        attrs["auto_pad"] = _AUTO_PAD[auto]
    elif auto in ("explicit", "notset", ""):
        attrs["pads"] = ctx.attr_ints("pads_begin", [0] * spatial) + ctx.attr_ints("pads_end", [0] * spatial)
    else:
        raise ctx.error(f"auto_pad='{auto}' is not supported")
    return attrs


@converter("Convolution", "opset1")
def convolution(ctx: LayerContext) -> ir.Value:
    spatial = ctx.input_rank(0) - 2
    return ctx.b.op("Conv", ctx.inputs[:2], _window_attrs(ctx, spatial))  # type: ignore[arg-type]


@converter("GroupConvolution", "opset1")
def group_convolution(ctx: LayerContext) -> ir.Value:
    """Weights [G, O/G, I/G, k...] -> ONNX [O, I/G, k...] with group=G (a free reshape of constant weights)."""
    b = ctx.b
    spatial = ctx.input_rank(0) - 2
    w = ctx.const(1)
    if w is not None:
        groups = w.shape[0]
        weights = b.const(w.reshape((w.shape[0] * w.shape[1],) + w.shape[2:])) if w.flags.c_contiguous else \
            b.reshape(ctx.inputs[1], [w.shape[0] * w.shape[1], *w.shape[2:]])
    else:
        dims = ctx.input_dims(1)
        if dims[0] is None:
            raise ctx.error("GroupConvolution needs a static group count")
        groups = dims[0]
        shape = b.concat([b.i64([-1]), b.shape_of(ctx.inputs[1], 2)], 0)
        weights = b.reshape(ctx.inputs[1], shape)
    attrs = _window_attrs(ctx, spatial)
    attrs["group"] = int(groups)
    return b.op("Conv", [ctx.inputs[0], weights], attrs)  # type: ignore[arg-type]


@converter("ConvolutionBackpropData", "opset1")
def convolution_backprop_data(ctx: LayerContext) -> ir.Value:
    """ONNX ConvTranspose has the same weight layout [C_in, C_out, k...]; a given output_shape must be constant."""
    spatial = ctx.input_rank(0) - 2
    attrs = _window_attrs(ctx, spatial)
    attrs["output_padding"] = ctx.attr_ints("output_padding", [0] * spatial)
    if len(ctx.inputs) > 2:
        attrs["output_shape"] = [int(v) for v in ctx.require_const(2, "output_shape").reshape(-1)]
        attrs.pop("pads", None)
        if "auto_pad" not in attrs:
            attrs["auto_pad"] = "SAME_UPPER"
    return ctx.b.op("ConvTranspose", ctx.inputs[:2], attrs)  # type: ignore[arg-type]
