"""Interpolate (1, 4, 11)."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from ir2onnx.convert.context import LayerContext
from ir2onnx.convert.registry import converter

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
