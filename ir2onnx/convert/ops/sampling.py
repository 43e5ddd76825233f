"""GridSample (9)."""

from __future__ import annotations

import onnx_ir as ir

from ir2onnx.convert.context import LayerContext
from ir2onnx.convert.registry import converter

_MODES_20 = {"bilinear": "linear", "bicubic": "cubic", "nearest": "nearest"}


@converter("GridSample", "opset9")
def grid_sample(ctx: LayerContext) -> ir.Value:
    """ONNX GridSample computes the same numbers (checked: every mode, padding mode and align_corners, nearest
    ties included); ONNX opset 20 renames the modes linear/cubic."""
    mode = ctx.attr_str("mode", "bilinear").lower()
    padding = ctx.attr_str("padding_mode", "zeros").lower()
    if mode not in _MODES_20 or padding not in ("zeros", "border", "reflection"):
        raise ctx.error(f"GridSample mode={mode}, padding_mode={padding} is not supported")
    if ctx.input_rank(0) != 4:
        raise ctx.error("GridSample needs a 4-D input")
    attrs = {"align_corners": int(ctx.attr_bool("align_corners", False)),
             "mode": _MODES_20[mode] if ctx.opset >= 20 else mode, "padding_mode": padding}
    return ctx.b.op("GridSample", ctx.inputs[:2], attrs)
