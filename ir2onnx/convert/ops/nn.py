"""MatMul, convolutions and pooling."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from ir2onnx.convert.context import LayerContext
from ir2onnx.convert.registry import converter


def _swap_last(ctx: LayerContext, x: ir.Value, rank: int) -> ir.Value:
    if rank < 2:
        return x  # OpenVINO ignores transpose flags on 1-D operands
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    return ctx.b.op("Transpose", [x], {"perm": perm})


@converter("MatMul", "opset1")
def matmul(ctx: LayerContext) -> ir.Value:
    a, b = ctx.inputs[0], ctx.inputs[1]
    if ctx.attr_bool("transpose_a", False):
        a = _swap_last(ctx, a, ctx.input_rank(0))
    if ctx.attr_bool("transpose_b", False):
        b = _swap_last(ctx, b, ctx.input_rank(1))
    return ctx.b.op("MatMul", [a, b])


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


def _rounding(ctx: LayerContext) -> int:
    mode = ctx.attr_str("rounding_type", "floor").lower()
    if mode not in ("floor", "ceil"):
        raise ctx.error(f"rounding_type='{mode}' is not supported")
    return int(mode == "ceil")


@converter("MaxPool", "opset1", "opset8", "opset14")
def max_pool(ctx: LayerContext) -> list[ir.Value] | ir.Value:
    spatial = ctx.input_rank(0) - 2
    attrs = _window_attrs(ctx, spatial, with_dilations=ctx.layer.version not in ("opset1", ""))
    attrs["kernel_shape"] = ctx.attr_ints("kernel")
    attrs["ceil_mode"] = _rounding(ctx)
    if len(ctx.layer.outputs) == 1:
        return ctx.b.op("MaxPool", [ctx.inputs[0]], attrs)  # type: ignore[arg-type]
    if ctx.attr_int("axis", 0) != 0:
        raise ctx.error("MaxPool indices with axis != 0 are not supported")
    values, indices = ctx.b.op_multi("MaxPool", [ctx.inputs[0]], attrs, outputs=2)  # type: ignore[arg-type]
    from ir2onnx.convert.builder import onnx_dtype

    et = ctx.output_type(1)
    return [values, indices if et.name == "i64" else ctx.b.cast(indices, onnx_dtype(et))]


@converter("AvgPool", "opset1", "opset14")
def avg_pool(ctx: LayerContext) -> ir.Value:
    spatial = ctx.input_rank(0) - 2
    attrs = _window_attrs(ctx, spatial, with_dilations=False)
    attrs["kernel_shape"] = ctx.attr_ints("kernel")
    attrs["ceil_mode"] = _rounding(ctx)
    x = ctx.inputs[0]
    include_pad = not ctx.attr_bool("exclude-pad", False)
    if include_pad and attrs["ceil_mode"] and "pads" in attrs:
        # OpenVINO divides every window by the kernel size, also one that overhangs the padded input in ceil
        # mode; ONNX leaves the overhang out. Zero-pad explicitly, stride-1 more at the end, and use floor mode.
        pads = list(attrs["pads"])  # type: ignore[call-overload]
        strides = list(attrs["strides"])  # type: ignore[call-overload]
        ends = [e + s - 1 for e, s in zip(pads[spatial:], strides)]
        x = ctx.b.op("Pad", [x, ctx.b.i64([0, 0] + pads[:spatial] + [0, 0] + ends)])
        attrs["pads"] = [0] * (2 * spatial)
        attrs["ceil_mode"] = 0
    attrs["count_include_pad"] = int(include_pad)
    return ctx.b.op("AveragePool", [x], attrs)  # type: ignore[arg-type]


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


@converter("Einsum", "opset7")
def einsum(ctx: LayerContext) -> ir.Value:
    return ctx.b.op("Einsum", ctx.inputs, {"equation": ctx.attr_str("equation")})


_RESIZE_MODES = {"nearest": "nearest", "linear_onnx": "linear", "cubic": "cubic"}
_COORD_MODES = {"half_pixel", "pytorch_half_pixel", "asymmetric", "align_corners"}
_NEAREST_MODES = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}


@converter("Interpolate", "opset4", "opset11")
def interpolate(ctx: LayerContext) -> ir.Value:
    """-> ONNX Resize with full-rank scales or sizes (axes expanded at conversion time; constants required)."""
    b = ctx.b
    mode = ctx.attr_str("mode").lower()
    coord = ctx.attr_str("coordinate_transformation_mode", "half_pixel").lower()
    nearest = ctx.attr_str("nearest_mode", "round_prefer_floor").lower()
    if mode not in _RESIZE_MODES or coord not in _COORD_MODES or (mode == "nearest" and nearest not in _NEAREST_MODES):
        raise ctx.error(f"Interpolate mode={mode}, coordinate_transformation_mode={coord}, nearest_mode={nearest} "
                        "has no exact ONNX Resize equivalent")
    if any(ctx.attr_ints("pads_begin", [])) or any(ctx.attr_ints("pads_end", [])):
        raise ctx.error("Interpolate with padding is not supported")
    if ctx.attr_bool("antialias", False):
        raise ctx.error("Interpolate with antialias is not supported")
    rank = ctx.input_rank(0)
    v11 = ctx.layer.version not in ("opset4",)
    axes_input = 2 if v11 else 3
    axes = [int(a) % rank for a in ctx.require_const(axes_input, "the axes").reshape(-1)] \
        if len(ctx.inputs) > axes_input else list(range(rank))
    by_scales = ctx.attr_str("shape_calculation_mode").lower() == "scales"
    values = ctx.require_const(1 if v11 or not by_scales else 2, "scales" if by_scales else "sizes").reshape(-1)
    attrs: dict[str, object] = {"mode": _RESIZE_MODES[mode], "coordinate_transformation_mode": coord}
    if mode == "nearest":
        attrs["nearest_mode"] = nearest
    if mode == "cubic":
        attrs["cubic_coeff_a"] = ctx.attr_float("cube_coeff", -0.75)
    if by_scales:
        scales = np.ones(rank, np.float32)
        scales[axes] = values.astype(np.float32)
        return b.op("Resize", [ctx.inputs[0], None, b.const(scales)], attrs)  # type: ignore[arg-type]
    dims = ctx.input_dims(0)
    sizes = b.shape_of(ctx.inputs[0])
    updates = b.i64([int(v) for v in values])
    sizes = b.op("ScatterElements", [sizes, b.i64(axes), updates], {"axis": 0}) if dims is not None else updates
    return b.op("Resize", [ctx.inputs[0], None, None, sizes], attrs)  # type: ignore[arg-type]
