"""YUV 4:2:0 to RGB/BGR: NV12toRGB-8, NV12toBGR-8, I420toRGB-8, I420toBGR-8.

Images are NHWC. NV12 comes as one plane [N, H * 3 / 2, W, 1] (Y rows, then interleaved U, V pairs) or two
planes, Y [N, H, W, 1] and UV [N, H / 2, W / 2, 2]; I420 as one plane (Y, then the U plane, then the V plane, each
H * W / 4 values) or three, Y [N, H, W, 1], U and V [N, H / 2, W / 2, 1]. Pixel (h, w) takes the chroma sample
(h / 2, w / 2). Output [N, H, W, 3].

What OpenVINO's CPU plugin computes (its vector kernel, in f32, in this order):
    y' = (y - 16) * 1.164,  u' = u - 128,  v' = v - 128
    R = 1.596 * v' + y',  G = (y' - 0.391 * u') - 0.813 * v',  B = 2.018 * u' + y'
then, for u8 images, rounding half to even; then clamping to [0, 255]. u8 images give u8, other types are
converted to f32 and back. The composition emits the same f32 operations one by one.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import GraphBuilder, onnx_dtype
from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.registry import converter


def _f(b: GraphBuilder, v: float) -> oir.Value:
    return b.const(np.array(v, np.float32))


def _planes(ctx: LayerContext, i420: bool) -> tuple[oir.Value, oir.Value, oir.Value]:
    """(Y [N, H, W, 1], U [N, H/2, W/2, 1], V [N, H/2, W/2, 1]) in the input's type."""
    b = ctx.b
    count = len([v for v in ctx.inputs if v is not None])
    want = 3 if i420 else 2
    if count not in (1, want):
        raise ctx.error(f"expected 1 or {want} input planes, got {count}")
    if count == want:
        y = ctx.inputs[0]
        if i420:
            return y, ctx.inputs[1], ctx.inputs[2]
        uv = ctx.inputs[1]
        return y, b.slice(uv, [0], [1], [3]), b.slice(uv, [1], [2], [3])
    x = ctx.inputs[0]  # [N, H * 3 / 2, W, 1]
    batch, width = b.shape_of(x, 0, 1), b.shape_of(x, 2, 3)
    height = b.op("Div", [b.op("Mul", [b.shape_of(x, 1, 2), b.i64([2])]), b.i64([3])])
    area = b.op("Mul", [height, width])
    flat = b.reshape(x, [0, -1])
    y = b.reshape(b.slice(flat, b.i64([0]), area, [1]), b.concat([batch, height, width, b.i64([1])], 0))
    half = b.concat([batch, b.op("Div", [height, b.i64([2])]), b.op("Div", [width, b.i64([2])])], 0)
    if not i420:
        uv = b.reshape(b.slice(flat, area, b.shape_of(flat, 1, 2), [1]), b.concat([half, b.i64([2])], 0))
        return y, b.slice(uv, [0], [1], [3]), b.slice(uv, [1], [2], [3])
    quarter = b.op("Div", [area, b.i64([4])])
    u_end = b.op("Add", [area, quarter])
    plane = b.concat([half, b.i64([1])], 0)
    u = b.reshape(b.slice(flat, area, u_end, [1]), plane)
    v = b.reshape(b.slice(flat, u_end, b.op("Add", [u_end, quarter]), [1]), plane)
    return y, u, v


def _convert(ctx: LayerContext, i420: bool, bgr: bool) -> oir.Value:
    b = ctx.b
    f32 = oir.DataType.FLOAT
    et = ctx.input_type(0)
    integral = et.name == "u8"
    y, u, v = (p if et.name == "f32" else b.cast(p, f32) for p in _planes(ctx, i420))
    # chroma to full resolution: [N, H/2, 1, W/2, 1] broadcast to [N, H/2, 2, W/2, 2], then [N, H, W, 1]
    full = b.shape_of(y)
    u, v = (b.reshape(b.op("Expand", [b.unsqueeze(p, [2, 4]), b.i64([1, 1, 2, 1, 2, 1])]), full) for p in (u, v))
    y = b.op("Mul", [b.op("Sub", [y, _f(b, 16.0)]), _f(b, 1.164)])
    u = b.op("Sub", [u, _f(b, 128.0)])
    v = b.op("Sub", [v, _f(b, 128.0)])
    r = b.op("Add", [b.op("Mul", [_f(b, 1.596), v]), y])
    g = b.op("Sub", [b.op("Sub", [y, b.op("Mul", [_f(b, 0.391), u])]), b.op("Mul", [_f(b, 0.813), v])])
    bl = b.op("Add", [b.op("Mul", [_f(b, 2.018), u]), y])
    out = b.concat([bl, g, r] if bgr else [r, g, bl], 3)
    if integral:
        out = b.op("Round", [out])  # half to even, as the plugin's vroundps
    out = b.op("Min", [b.op("Max", [out, _f(b, 0.0)]), _f(b, 255.0)])
    out_t = onnx_dtype(ctx.output_type(0))
    return out if out_t == f32 else b.cast(out, out_t)


@converter("NV12toRGB", "opset8", onnx="Slice, Reshape, Expand, Mul, Add, Sub, Round, Min, Max")
def nv12_to_rgb(ctx: LayerContext) -> oir.Value:
    return _convert(ctx, i420=False, bgr=False)


@converter("NV12toBGR", "opset8", onnx="Slice, Reshape, Expand, Mul, Add, Sub, Round, Min, Max")
def nv12_to_bgr(ctx: LayerContext) -> oir.Value:
    return _convert(ctx, i420=False, bgr=True)


@converter("I420toRGB", "opset8", onnx="Slice, Reshape, Expand, Mul, Add, Sub, Round, Min, Max")
def i420_to_rgb(ctx: LayerContext) -> oir.Value:
    return _convert(ctx, i420=True, bgr=False)


@converter("I420toBGR", "opset8", onnx="Slice, Reshape, Expand, Mul, Add, Sub, Round, Min, Max")
def i420_to_bgr(ctx: LayerContext) -> oir.Value:
    return _convert(ctx, i420=True, bgr=True)
