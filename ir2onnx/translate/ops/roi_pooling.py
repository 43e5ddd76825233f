"""ROIPooling-2 (Fast R-CNN): max and bilinear, composed as OpenVINO's CPU plugin computes them.

ROIs are rows (batch id, x1, y1, x2, y2); the first row whose batch id (truncated) is -1 ends them: it and every
later row pool to zeros.

* max: the ROI corners times spatial_scale are rounded half away from zero; the ROI spans
  max(end - start + 1, 1) cells, bin i covers [floor(i * size / pooled), ceil((i + 1) * size / pooled)) shifted by
  the start and clamped to the map, in integers (ONNX MaxRoiPool computes the bins in float, which can land one
  cell off). An empty bin is 0. An ONNX Loop visits the ROIs (a bin's max is a masked max over columns, then over
  rows) so that only one ROI's [C, H, pooled_w, W] intermediate is held at a time.
* bilinear: one sample per bin at normalized ROI coordinates times (size - 1), the last bin at the ROI's end,
  a single bin at its centre; a sample outside the map is 0.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import GraphBuilder, onnx_dtype
from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.registry import converter


def _f(b: GraphBuilder, v: float) -> oir.Value:
    return b.const(np.array(v, np.float32))


def _col(b: GraphBuilder, rois: oir.Value, k: int) -> oir.Value:
    return b.reshape(b.slice(rois, [k], [k + 1], [1]), [-1, 1])  # [R, 1]


def round_half_away(b: GraphBuilder, v: oir.Value) -> oir.Value:
    """std::round: halves go away from zero (ONNX Round goes to even)."""
    t = b.op("Where", [b.op("Less", [v, _f(b, 0.0)]), b.op("Ceil", [v]), b.op("Floor", [v])])  # trunc
    half = b.op("Equal", [b.op("Abs", [b.op("Sub", [v, t])]), _f(b, 0.5)])
    return b.op("Where", [half, b.op("Add", [t, b.op("Sign", [v])]), b.op("Round", [v])])


def _bins(b: GraphBuilder, start: oir.Value, end: oir.Value, pooled: int, size: oir.Value) -> tuple[oir.Value, oir.Value]:
    """Integer [R, pooled] bin bounds [lo, hi) along one axis, clamped to [0, size]."""
    span = b.op("Max", [b.op("Add", [b.op("Sub", [end, start]), b.i64(1)]), b.i64(1)])  # [R, 1]
    i = b.const(np.arange(pooled, dtype=np.int64).reshape(1, -1))
    lo = b.op("Div", [b.op("Mul", [i, span]), b.i64(pooled)])
    hi = b.op("Div", [b.op("Add", [b.op("Mul", [b.op("Add", [i, b.i64(1)]), span]), b.i64(pooled - 1)]),
                      b.i64(pooled)])
    clamp = (lambda v: b.op("Min", [b.op("Max", [b.op("Add", [v, start]), b.i64(0)]), size]))
    return clamp(lo), clamp(hi)


def _max_pool(ctx: LayerContext, data: oir.Value, rois: oir.Value, batch: oir.Value, live: oir.Value, ph: int,
              pw: int, scale: float) -> oir.Value:
    b = ctx.b
    i64, f32 = oir.DataType.INT64, oir.DataType.FLOAT
    sw, sh, ew, eh = (b.cast(round_half_away(b, b.op("Mul", [_col(b, rois, k), _f(b, scale)])), i64)
                      for k in (1, 2, 3, 4))
    height, width = b.reshape(b.shape_of(data, 2, 3), []), b.reshape(b.shape_of(data, 3, 4), [])
    hs, he = _bins(b, sh, eh, ph, height)
    ws, we = _bins(b, sw, ew, pw, width)
    h = b.unsqueeze(b.op("Range", [b.i64(0), height, b.i64(1)]), [0, 1])  # [1, 1, H]
    w = b.unsqueeze(b.op("Range", [b.i64(0), width, b.i64(1)]), [0, 1])
    rows = b.op("And", [b.op("GreaterOrEqual", [h, b.unsqueeze(hs, [2])]), b.op("Less", [h, b.unsqueeze(he, [2])])])
    cols = b.op("And", [b.op("GreaterOrEqual", [w, b.unsqueeze(ws, [2])]), b.op("Less", [w, b.unsqueeze(we, [2])])])
    empty = b.op("Or", [b.unsqueeze(b.op("LessOrEqual", [he, hs]), [2]),
                        b.unsqueeze(b.op("LessOrEqual", [we, ws]), [1])])  # [R, ph, pw]
    zero_out = b.op("Or", [empty, b.unsqueeze(b.op("Not", [live]), [1, 2])])

    name = ctx.layer.name or f"roi_pooling_{ctx.layer.id}"
    cb, it, cond = b.loop_body(name)
    one = cb.reshape(it, [1])
    x = cb.squeeze(cb.op("Gather", [data, cb.op("Gather", [batch, one], {"axis": 0})], {"axis": 0}), [0])  # [C,H,W]
    neg = cb.const(np.array(-np.inf, np.float32))
    col_i = cb.op("Gather", [cols, it], {"axis": 0})  # [pw, W]
    row_i = cb.op("Gather", [rows, it], {"axis": 0})  # [ph, H]
    t = cb.reduce("ReduceMax", cb.op("Where", [col_i, cb.unsqueeze(x, [2]), neg]), [3], keepdims=False)  # [C,H,pw]
    u = cb.op("Where", [cb.unsqueeze(row_i, [2]), cb.unsqueeze(t, [1]), neg])  # [C, ph, H, pw]
    u = cb.reduce("ReduceMax", u, [2], keepdims=False)  # [C, ph, pw]
    u = cb.op("Where", [cb.op("Gather", [zero_out, it], {"axis": 0}), _f(cb, 0.0), u])
    u.type, u.shape = oir.TensorType(f32), oir.Shape([None, None, None])
    body = cb.build_loop_body(cond, [u], b.names.fresh(f"{name}/body"))
    count = b.reshape(b.shape_of(rois, 0, 1), [])
    return b.op("Loop", [count, b.const(np.array(True))], {"body": body})


def _axis_sample(b: GraphBuilder, start: oir.Value, end: oir.Value, pooled: int, size: oir.Value) -> oir.Value:
    """[R, pooled] sample coordinates along one axis (the plugin's formula)."""
    s1 = b.cast(b.op("Sub", [size, b.i64(1)]), oir.DataType.FLOAT)
    if pooled == 1:
        return b.op("Mul", [b.op("Mul", [_f(b, 0.5), b.op("Add", [start, end])]), s1])
    step = b.op("Div", [b.op("Mul", [b.op("Sub", [end, start]), s1]), _f(b, float(pooled - 1))])
    i = b.const(np.arange(pooled, dtype=np.float32).reshape(1, -1))
    inner = b.op("Add", [b.op("Mul", [i, step]), b.op("Mul", [start, s1])])
    last = b.const((np.arange(pooled) == pooled - 1).reshape(1, -1))
    return b.op("Where", [last, b.op("Mul", [end, s1]), inner])


def _bilinear(b: GraphBuilder, data: oir.Value, rois: oir.Value, batch: oir.Value, live: oir.Value, ph: int,
              pw: int) -> oir.Value:
    i64, f32 = oir.DataType.INT64, oir.DataType.FLOAT
    height, width = b.reshape(b.shape_of(data, 2, 3), []), b.reshape(b.shape_of(data, 3, 4), [])
    y = _axis_sample(b, _col(b, rois, 2), _col(b, rois, 4), ph, height)  # [R, ph]
    x = _axis_sample(b, _col(b, rois, 1), _col(b, rois, 3), pw, width)  # [R, pw]

    def taps(v: oir.Value, size: oir.Value) -> tuple[oir.Value, oir.Value, oir.Value, oir.Value]:
        last = b.op("Sub", [size, b.i64(1)])
        inside = b.op("And", [b.op("GreaterOrEqual", [v, _f(b, 0.0)]),
                              b.op("LessOrEqual", [v, b.cast(last, f32)])])
        v0 = b.op("Floor", [v])
        lo = b.op("Max", [b.op("Min", [b.cast(v0, i64), last]), b.i64(0)])
        hi = b.op("Max", [b.op("Min", [b.cast(b.op("Ceil", [v]), i64), last]), b.i64(0)])
        return lo, hi, b.op("Sub", [v, v0]), inside

    y0, y1, fy, iny = taps(y, height)
    x0, x1, fx, inx = taps(x, width)
    nhwc = b.op("Transpose", [data], {"perm": [0, 2, 3, 1]})
    grid = b.concat([b.shape_of(rois, 0, 1), b.i64([ph, pw, 1])], 0)

    def tap(yi: oir.Value, xi: oir.Value) -> oir.Value:  # [R, ph, pw, C]
        idx = b.concat([b.op("Expand", [b.reshape(batch, [-1, 1, 1, 1]), grid]),
                        b.op("Expand", [b.unsqueeze(yi, [2, 3]), grid]),
                        b.op("Expand", [b.unsqueeze(xi, [1, 3]), grid])], 3)
        return b.op("GatherND", [nhwc, idx])

    tl, tr, bl, br = tap(y0, x0), tap(y0, x1), tap(y1, x0), tap(y1, x1)
    fx4, fy4 = b.unsqueeze(fx, [1, 3]), b.unsqueeze(fy, [2, 3])
    top = b.op("Add", [tl, b.op("Mul", [b.op("Sub", [tr, tl]), fx4])])
    bottom = b.op("Add", [bl, b.op("Mul", [b.op("Sub", [br, bl]), fx4])])
    out = b.op("Add", [top, b.op("Mul", [b.op("Sub", [bottom, top]), fy4])])
    keep = b.op("And", [b.op("And", [b.unsqueeze(iny, [2, 3]), b.unsqueeze(inx, [1, 3])]),
                        b.reshape(live, [-1, 1, 1, 1])])
    out = b.op("Where", [keep, out, _f(b, 0.0)])
    return b.op("Transpose", [out], {"perm": [0, 3, 1, 2]})


def live_rois(b: GraphBuilder, rois: oir.Value, data: oir.Value) -> tuple[oir.Value, oir.Value]:
    """([R] batch index, [R] live) of f32 ROI rows (batch id, ...): rows before the first whose batch id truncates
    to -1 are live; a live row's batch id is clamped into the data's batch, other rows read batch 0."""
    i64 = oir.DataType.INT64
    ids = b.reshape(b.cast(b.slice(rois, [0], [1], [1]), i64), [-1])  # [R]
    count = b.shape_of(rois, 0, 1)
    r = b.op("Range", [b.i64(0), b.reshape(count, []), b.i64(1)])
    first_end = b.reduce("ReduceMin", b.op("Where", [b.op("Equal", [ids, b.i64(-1)]), r, b.reshape(count, [])]),
                         [0], keepdims=True)
    live = b.op("Less", [r, first_end])
    batch = b.op("Where", [live, b.op("Min", [b.op("Max", [ids, b.i64(0)]),
                                              b.op("Sub", [b.reshape(b.shape_of(data, 0, 1), []), b.i64(1)])]),
                           b.i64(0)])
    return batch, live


@converter("ROIPooling", "opset2", onnx="Loop (max), GatherND (bilinear), Where, ReduceMax")
def roi_pooling(ctx: LayerContext) -> oir.Value:
    b = ctx.b
    if "output_size" in ctx.layer.data:
        ph, pw = ctx.attr_ints("output_size")
    else:
        ph, pw = ctx.attr_int("pooled_h"), ctx.attr_int("pooled_w")
    method = ctx.attr_str("method", "max").lower()
    if method not in ("max", "bilinear"):
        raise ctx.error(f"unknown method '{method}'")
    if ph < 1 or pw < 1:
        raise ctx.error(f"output size {ph}x{pw} must be positive")
    ctx.check_fits(ph * pw, f"one ROI's {ph}x{pw} output of each channel")
    et = ctx.input_type(0)
    data, rois = ctx.float32_input(0), ctx.float32_input(1)
    batch, live = live_rois(b, rois, data)
    if method == "max":
        y = _max_pool(ctx, data, rois, batch, live, ph, pw, float(np.float32(ctx.attr_float("spatial_scale"))))
    else:
        y = _bilinear(b, data, rois, batch, live, ph, pw)
    return y if et.name == "f32" else b.cast(y, onnx_dtype(et))
