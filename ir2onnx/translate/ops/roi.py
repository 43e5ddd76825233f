"""ROI ops: ROIAlign-3/9, ROIAlignRotated-15.

ROIAlign, avg mode, is ONNX RoiAlign-16: OpenVINO's `asymmetric` is ONNX `output_half_pixel` (ROI sides at least 1),
`half_pixel_for_nn` is ONNX `half_pixel` (x * scale - 0.5), and OpenVINO's `half_pixel`, (x + 0.5) * scale - 0.5,
is ONNX `half_pixel` on ROIs shifted by 0.5. Max mode is composed: onnxruntime's RoiAlign takes the max of the
weighted corner terms rather than of the interpolated samples, and OpenVINO's CPU plugin starts the max at 0 (a
bin whose samples are all negative pools to 0), which the composition reproduces.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import GraphBuilder, onnx_dtype
from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.registry import converter


def _f(b: GraphBuilder, v: float) -> oir.Value:
    return b.const(np.array(v, np.float32))


def _column(b: GraphBuilder, rois: oir.Value, k: int) -> oir.Value:
    """Column k of [R, n] ROIs as [R]."""
    return b.reshape(b.slice(rois, [k], [k + 1], [1]), [-1])


class _Axis:
    """Bilinear sample taps along one axis for every ROI: `count` samples per bin (per ROI), padded to `s_max`."""

    def __init__(self, b: GraphBuilder, start: oir.Value, bin_size: oir.Value, count: oir.Value, s_max: oir.Value,
                 pooled: int, size: oir.Value) -> None:
        # pre[r, p, s] = (start + p * bin) + bin / count * (s + 0.5), as OpenVINO orders the arithmetic
        p = b.const(np.arange(pooled, dtype=np.float32).reshape(1, pooled, 1))
        s = b.op("Range", [_f(b, 0.5), b.op("Add", [b.cast(s_max, oir.DataType.FLOAT), _f(b, 0.5)]), _f(b, 1.0)])
        s = b.reshape(s, [1, 1, -1])
        r3 = [-1, 1, 1]
        cnt = b.cast(count, oir.DataType.FLOAT)
        first = b.op("Add", [b.reshape(start, r3), b.op("Mul", [p, b.reshape(bin_size, r3)])])
        dist = b.reshape(b.op("Div", [bin_size, b.op("Max", [cnt, _f(b, 1.0)])]), r3)
        pre = b.op("Add", [first, b.op("Mul", [dist, s])])
        size_f = b.cast(size, oir.DataType.FLOAT)
        inside = b.op("And", [b.op("GreaterOrEqual", [pre, _f(b, -1.0)]), b.op("LessOrEqual", [pre, size_f])])
        # samples past the ROI's own count are padding
        used = b.op("Less", [b.reshape(b.op("Range", [b.i64(0), s_max, b.i64(1)]), [1, 1, -1]),
                             b.reshape(count, r3)])
        self.valid = b.op("And", [inside, used])
        c = b.op("Max", [pre, _f(b, 0.0)])
        low = b.cast(b.op("Floor", [c]), oir.DataType.INT64)
        last = b.op("Sub", [size, b.i64(1)])
        at_end = b.op("GreaterOrEqual", [low, last])
        low = b.op("Where", [at_end, b.op("Max", [last, b.i64(0)]), low])
        high = b.op("Where", [at_end, low, b.op("Add", [low, b.i64(1)])])
        c = b.op("Where", [at_end, b.cast(low, oir.DataType.FLOAT), c])
        frac = b.op("Sub", [c, b.cast(low, oir.DataType.FLOAT)])
        zero = _f(b, 0.0)
        w_low = b.op("Where", [self.valid, b.op("Sub", [_f(b, 1.0), frac]), zero])
        w_high = b.op("Where", [self.valid, frac, zero])
        # [R, pooled, S, 2] taps (low, high), flattened per ROI
        self.index = b.reshape(b.concat([b.unsqueeze(low, [-1]), b.unsqueeze(high, [-1])], -1), [0, -1])
        self.weight = b.reshape(b.concat([b.unsqueeze(w_low, [-1]), b.unsqueeze(w_high, [-1])], -1), [0, -1])


def _max_pool_samples(b: GraphBuilder, data_nhwc: oir.Value, batch: oir.Value, ya: _Axis, xa: _Axis, ph: int,
                      pw: int, sy: oir.Value, sx: oir.Value) -> oir.Value:
    """max(0, every interpolated sample of each bin) -> [R, C, ph, pw]."""
    ny = b.shape_of(ya.index, 1, 2)
    nx = b.shape_of(xa.index, 1, 2)
    grid = b.concat([b.shape_of(batch), ny, nx], 0)
    bi = b.op("Expand", [b.reshape(batch, [-1, 1, 1, 1]), b.concat([grid, b.i64([1])], 0)])
    yi = b.op("Expand", [b.unsqueeze(ya.index, [2, 3]), b.concat([grid, b.i64([1])], 0)])
    xi = b.op("Expand", [b.unsqueeze(xa.index, [1, 3]), b.concat([grid, b.i64([1])], 0)])
    taps = b.op("GatherND", [data_nhwc, b.concat([bi, yi, xi], 3)])  # [R, Ny, Nx, C]
    w = b.op("Mul", [b.unsqueeze(ya.weight, [2, 3]), b.unsqueeze(xa.weight, [1, 3])])
    v = b.op("Mul", [taps, w])
    # [R, ph, Sy, 2, pw, Sx, 2, C] -> interpolated samples [R, ph, Sy, pw, Sx, C]
    v = b.reshape(v, b.concat([b.shape_of(batch), b.i64([ph]), b.reshape(sy, [1]), b.i64([2, pw]),
                               b.reshape(sx, [1]), b.i64([2]), b.shape_of(data_nhwc, 3, 4)], 0))
    v = b.reduce("ReduceSum", v, [3, 6], keepdims=False)
    pooled = b.reduce("ReduceMax", v, [2, 4], keepdims=False)  # [R, ph, pw, C]
    pooled = b.op("Max", [pooled, _f(b, 0.0)])
    return b.op("Transpose", [pooled], {"perm": [0, 3, 1, 2]})


@converter("ROIAlign", "opset3", "opset9")
def roi_align(ctx: LayerContext) -> oir.Value:
    b = ctx.b
    ph, pw = ctx.attr_int("pooled_h"), ctx.attr_int("pooled_w")
    sr = ctx.attr_int("sampling_ratio")
    scale = ctx.attr_float("spatial_scale")
    mode = ctx.attr_str("mode").lower()
    aligned = ctx.attr_str("aligned_mode", "asymmetric").lower()
    if mode not in ("avg", "max"):
        raise ctx.error(f"unknown mode '{mode}'")
    if aligned not in ("asymmetric", "half_pixel_for_nn", "half_pixel"):
        raise ctx.error(f"unknown aligned_mode '{aligned}'")
    et = ctx.input_type(0)
    data, rois = ctx.inputs[0], ctx.inputs[1]
    if et.name != "f32":
        data, rois = b.cast(data, oir.DataType.FLOAT), b.cast(rois, oir.DataType.FLOAT)
    batch = b.cast(ctx.inputs[2], oir.DataType.INT64)
    if mode == "avg":
        if aligned == "half_pixel":
            rois = b.op("Add", [rois, _f(b, 0.5)])
        y = b.op("RoiAlign", [data, rois, batch], {
            "mode": "avg", "output_height": ph, "output_width": pw, "sampling_ratio": sr, "spatial_scale": scale,
            "coordinate_transformation_mode": "output_half_pixel" if aligned == "asymmetric" else "half_pixel"})
    else:
        src = 0.5 if aligned == "half_pixel" else 0.0
        dst = -0.5 if aligned != "asymmetric" else 0.0
        x1, y1, x2, y2 = (b.op("Add", [b.op("Mul", [b.op("Add", [_column(b, rois, k), _f(b, src)]), _f(b, scale)]),
                                       _f(b, dst)]) for k in range(4))
        w, h = b.op("Sub", [x2, x1]), b.op("Sub", [y2, y1])
        if aligned == "asymmetric":
            w, h = b.op("Max", [w, _f(b, 1.0)]), b.op("Max", [h, _f(b, 1.0)])
        bw, bh = b.op("Div", [w, _f(b, float(pw))]), b.op("Div", [h, _f(b, float(ph))])
        if sr > 0:
            cx = cy = b.op("Expand", [b.i64(sr), b.shape_of(batch)])
            sx = sy = b.i64(sr)
        else:
            cx, cy = b.cast(b.op("Ceil", [bw]), oir.DataType.INT64), b.cast(b.op("Ceil", [bh]), oir.DataType.INT64)
            sx = b.op("Max", [b.reduce("ReduceMax", cx, [0], keepdims=False), b.i64(1)])
            sy = b.op("Max", [b.reduce("ReduceMax", cy, [0], keepdims=False), b.i64(1)])
        ya = _Axis(b, y1, bh, cy, sy, ph, b.reshape(b.shape_of(data, 2, 3), []))
        xa = _Axis(b, x1, bw, cx, sx, pw, b.reshape(b.shape_of(data, 3, 4), []))
        y = _max_pool_samples(b, b.op("Transpose", [data], {"perm": [0, 2, 3, 1]}), batch, ya, xa, ph, pw,
                              sy, sx)
    return y if et.name == "f32" else b.cast(y, onnx_dtype(et))


@converter("ROIAlignRotated", "opset15", onnx="Cos, Sin, GatherND (bilinear taps), Where, ReduceSum")
def roi_align_rotated(ctx: LayerContext) -> oir.Value:
    """Average pooling over rotated ROIs (centre x, centre y, width, height, angle in radians), as OpenVINO computes
    it: centre * spatial_scale - 0.5, sizes * spatial_scale (no minimum), the angle negated in clockwise_mode; a
    bin's samples (sampling_ratio, or ceil(bin size) per ROI when 0) lie at -size/2 + bin * bin_size +
    (s + 0.5) * bin_size / count in the ROI's frame, turned by the angle: y = py cos - px sin + cy,
    x = py sin + px cos + cx. Samples outside [-1, W] x [-1, H] add 0; the others are clamped at 0 and interpolated
    between floor and floor + 1 (the last row/column alone at the far edge), each adding its value / count."""
    b = ctx.b
    i64, f32 = oir.DataType.INT64, oir.DataType.FLOAT
    ph, pw = ctx.attr_int("pooled_h"), ctx.attr_int("pooled_w")
    sr = ctx.attr_int("sampling_ratio")
    scale = float(np.float32(ctx.attr_float("spatial_scale")))
    clockwise = ctx.attr_bool("clockwise_mode", False)
    if ph < 1 or pw < 1 or sr < 0:
        raise ctx.error("pooled_h/pooled_w must be positive and sampling_ratio non-negative")
    et = ctx.input_type(0)
    data, rois = ctx.float32_input(0), ctx.float32_input(1)
    batch = b.cast(ctx.inputs[2], i64)
    sc = _f(b, scale)
    col = (lambda k: b.reshape(b.slice(rois, [k], [k + 1], [1]), [-1, 1, 1, 1, 1]))  # [R, 1, 1, 1, 1]
    cx, cy = (b.op("Sub", [b.op("Mul", [col(k), sc]), _f(b, 0.5)]) for k in (0, 1))
    width, height = (b.op("Mul", [col(k), sc]) for k in (2, 3))
    angle = col(4)
    if clockwise:
        angle = b.op("Neg", [angle])
    cos, sin = b.op("Cos", [angle]), b.op("Sin", [angle])
    x1 = b.op("Div", [b.op("Neg", [width]), _f(b, 2.0)])
    y1 = b.op("Div", [b.op("Neg", [height]), _f(b, 2.0)])
    bin_w, bin_h = b.op("Div", [width, _f(b, float(pw))]), b.op("Div", [height, _f(b, float(ph))])
    if sr > 0:
        cnt_x = cnt_y = b.op("Expand", [b.i64(sr), b.shape_of(col(0))])  # [R, 1, 1, 1, 1]
        sx_max = sy_max = b.i64(sr)
    else:
        cnt_x, cnt_y = b.cast(b.op("Ceil", [bin_w]), i64), b.cast(b.op("Ceil", [bin_h]), i64)
        sx_max = b.op("Max", [b.reduce("ReduceMax", b.reshape(cnt_x, [-1]), [0], keepdims=False), b.i64(1)])
        sy_max = b.op("Max", [b.reduce("ReduceMax", b.reshape(cnt_y, [-1]), [0], keepdims=False), b.i64(1)])
    # [R, ph, pw, Sy, Sx] sample grid
    sy_i = b.reshape(b.op("Range", [b.i64(0), sy_max, b.i64(1)]), [1, 1, 1, -1, 1])
    sx_i = b.reshape(b.op("Range", [b.i64(0), sx_max, b.i64(1)]), [1, 1, 1, 1, -1])
    dist_x = b.op("Div", [bin_w, b.cast(cnt_x, f32)])
    dist_y = b.op("Div", [bin_h, b.cast(cnt_y, f32)])
    yb = b.const(np.arange(ph, dtype=np.float32).reshape(1, ph, 1, 1, 1))
    xb = b.const(np.arange(pw, dtype=np.float32).reshape(1, 1, pw, 1, 1))
    half = _f(b, 0.5)
    pre_y = b.op("Add", [b.op("Add", [y1, b.op("Mul", [yb, bin_h])]),
                         b.op("Mul", [dist_y, b.op("Add", [b.cast(sy_i, f32), half])])])
    pre_x = b.op("Add", [b.op("Add", [x1, b.op("Mul", [xb, bin_w])]),
                         b.op("Mul", [dist_x, b.op("Add", [b.cast(sx_i, f32), half])])])
    y = b.op("Add", [b.op("Sub", [b.op("Mul", [pre_y, cos]), b.op("Mul", [pre_x, sin])]), cy])
    x = b.op("Add", [b.op("Add", [b.op("Mul", [pre_y, sin]), b.op("Mul", [pre_x, cos])]), cx])
    hgt, wid = b.reshape(b.shape_of(data, 2, 3), []), b.reshape(b.shape_of(data, 3, 4), [])
    used = b.op("And", [b.op("Less", [sy_i, cnt_y]), b.op("Less", [sx_i, cnt_x])])
    inside = b.op("And", [
        b.op("And", [b.op("GreaterOrEqual", [x, _f(b, -1.0)]), b.op("LessOrEqual", [x, b.cast(wid, f32)])]),
        b.op("And", [b.op("GreaterOrEqual", [y, _f(b, -1.0)]), b.op("LessOrEqual", [y, b.cast(hgt, f32)])])])
    valid = b.op("And", [used, inside])

    def taps(v: oir.Value, size: oir.Value) -> tuple[oir.Value, oir.Value, oir.Value]:
        v = b.op("Max", [b.op("Where", [valid, v, _f(b, 0.0)]), _f(b, 0.0)])
        low = b.cast(b.op("Floor", [v]), i64)
        last = b.op("Sub", [size, b.i64(1)])
        at_end = b.op("GreaterOrEqual", [low, last])
        low = b.op("Where", [at_end, last, low])
        high = b.op("Where", [at_end, low, b.op("Add", [low, b.i64(1)])])
        v = b.op("Where", [at_end, b.cast(low, f32), v])
        return low, high, b.op("Sub", [v, b.cast(low, f32)])

    yl, yh, ly = taps(y, hgt)
    xl, xh, lx = taps(x, wid)
    one = _f(b, 1.0)
    hy, hx = b.op("Sub", [one, ly]), b.op("Sub", [one, lx])
    nhwc = b.op("Transpose", [data], {"perm": [0, 2, 3, 1]})
    grid = b.shape_of(valid)
    bi = b.op("Expand", [b.reshape(batch, [-1, 1, 1, 1, 1]), grid])

    def tap(yi: oir.Value, xi: oir.Value) -> oir.Value:  # [R, ph, pw, Sy, Sx, C]
        idx = b.concat([b.unsqueeze(v, [-1]) for v in (bi, b.op("Expand", [yi, grid]), b.op("Expand", [xi, grid]))],
                       -1)
        return b.op("GatherND", [nhwc, idx])

    terms = [b.op("Mul", [b.unsqueeze(b.op("Mul", [wy, wx]), [-1]), tap(yi, xi)])
             for yi, wy in ((yl, hy), (yh, ly)) for xi, wx in ((xl, hx), (xh, lx))]
    value = b.op("Add", [b.op("Add", [b.op("Add", [terms[0], terms[1]]), terms[2]]), terms[3]])
    count = b.cast(b.op("Mul", [cnt_x, cnt_y]), f32)
    value = b.op("Div", [value, b.unsqueeze(count, [-1])])
    value = b.op("Where", [b.unsqueeze(valid, [-1]), value, _f(b, 0.0)])
    y_out = b.reduce("ReduceSum", value, [3, 4], keepdims=False)  # [R, ph, pw, C]
    y_out = b.op("Transpose", [y_out], {"perm": [0, 3, 1, 2]})
    return y_out if et.name == "f32" else b.cast(y_out, onnx_dtype(et))
