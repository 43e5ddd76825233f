"""GridSample (9).

The CPU plugin samples integer data in f32 and converts back: 8-bit results rounded half to even and saturated,
wider ones truncated toward zero, then 16-bit ones wrapped and 32/64-bit ones saturated (checked on ties,
negatives and bicubic overshoot). Nearest copies elements, which a round trip through f32 does not for values
past 2^24: on 32/64-bit integers it is refused.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import onnx_dtype
from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.ops.precision import float_function
from ir2onnx.translate.registry import converter

_MODES_20 = {"bilinear": "linear", "bicubic": "cubic", "nearest": "nearest"}


@converter("GridSample", "opset9")
def grid_sample(ctx: LayerContext) -> oir.Value:
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
    b = ctx.b
    et = ctx.input_type(0)

    def sample(x: oir.Value) -> oir.Value:
        return b.op("GridSample", [x, ctx.inputs[1]], attrs)

    if et.is_float:
        return sample(ctx.inputs[0])
    if et.bits == 8:
        return float_function(ctx, ctx.inputs[0], et, sample)
    if mode == "nearest" and et.bits > 16:
        raise ctx.error(f"GridSample nearest on {et.name} copies elements that f32 cannot hold exactly; "
                        "onnxruntime's GridSample has no integer kernel")
    y = sample(b.cast(ctx.inputs[0], oir.DataType.FLOAT))
    if et.bits == 16:  # truncated to int32, then wrapped (bicubic overshoot past 32767 comes back negative)
        return b.cast(b.cast(y, oir.DataType.INT32), onnx_dtype(et))
    # truncated toward zero (Cast) after saturation in f64
    y = b.cast(y, oir.DataType.DOUBLE)
    info = np.iinfo(et.numpy)
    hi = float(info.max) if et.bits < 64 else float(np.nextafter(np.float64(info.max), 0))
    y = b.op("Clip", [y, b.const(float(info.min), np.float64), b.const(hi, np.float64)])
    return b.cast(y, onnx_dtype(et))
