"""Position-sensitive ROI pooling: PSROIPooling-1 (average, bilinear) and DeformablePSROIPooling-1, composed as
OpenVINO's CPU plugin computes them.

ROIs are rows (batch id, x1, y1, x2, y2); the first row whose batch id truncates to -1 ends them: it and every
later row pool to zeros. The output is [R, output_dim, group_size, group_size].

* PSROIPooling average: corners rounded half away from zero, start = round(x1) * scale, end = round(x2 + 1) *
  scale, size at least 0.1; bin i spans [floor(start + i * bin), ceil(start + (i + 1) * bin)) clamped to the map,
  averaged over channel (c * G + h) * G + w (an empty bin is 0). An ONNX Loop visits the ROIs so that one ROI's
  [C, H, W] plane set is held at a time.
* PSROIPooling bilinear: spatial_bins_y x spatial_bins_x sub-boxes of the (unrounded, scaled) ROI; sub-box (by,
  bx) reads channel c + (by * bins_x + bx) * output_dim at h * (box height) * (H - 1) / (G - 1) + box start *
  (H - 1) (the box centre when G is 1); samples outside [0, H-1] x [0, W-1] add 0; the sum is divided by the bin
  count.
* DeformablePSROIPooling: start = round(x1) * scale - 0.5, end = (round(x2) + 1) * scale - 0.5, size at least
  0.1; bin (h, w) is shifted by offsets[r, 2 * class + (0: x, 1: y), part_h, part_w] * trans_std * ROI size
  (class = c / (output_dim / classes), part = h * part_size / G); its spatial_bins_y x spatial_bins_x samples that
  lie in [-0.5, size - 0.5] are clamped to the map, interpolated in channel (c * G + h) * G + w and averaged.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import GraphBuilder, onnx_dtype
from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.ops.roi_pooling import live_rois, round_half_away
from ir2onnx.translate.registry import converter

F32, I64 = oir.DataType.FLOAT, oir.DataType.INT64


def _f(b: GraphBuilder, v: float) -> oir.Value:
    return b.const(np.array(v, np.float32))


def _col(b: GraphBuilder, rois: oir.Value, k: int, rank: int = 2) -> oir.Value:
    """Column k of [R, 5] ROIs as [R, 1, ...] (rank dims)."""
    return b.reshape(b.slice(rois, [k], [k + 1], [1]), [-1] + [1] * (rank - 1))


def _hw(b: GraphBuilder, data: oir.Value) -> tuple[oir.Value, oir.Value]:
    """(H, W) of NCHW data as int64 scalars."""
    return b.reshape(b.shape_of(data, 2, 3), []), b.reshape(b.shape_of(data, 3, 4), [])


def _inputs(ctx: LayerContext) -> tuple[oir.Value, oir.Value]:
    return ctx.float32_input(0), ctx.float32_input(1)


def _finish(ctx: LayerContext, y: oir.Value, live: oir.Value) -> oir.Value:
    b = ctx.b
    y = b.op("Where", [b.reshape(live, [-1, 1, 1, 1]), y, _f(b, 0.0)])
    et = ctx.input_type(0)
    return y if et.name == "f32" else b.cast(y, onnx_dtype(et))


def _avg_bounds(b: GraphBuilder, start: oir.Value, bin_size: oir.Value, g: int, size: oir.Value) -> tuple[oir.Value,
                                                                                                       oir.Value]:
    """[R, G] integer bin bounds [lo, hi) clamped to [0, size]."""
    i = b.const(np.arange(g, dtype=np.float32).reshape(1, -1))
    lo = b.op("Floor", [b.op("Add", [b.op("Mul", [i, bin_size]), start])])
    hi = b.op("Ceil", [b.op("Add", [b.op("Mul", [b.op("Add", [i, _f(b, 1.0)]), bin_size]), start])])
    size_f = b.cast(size, F32)
    clamp = (lambda v: b.cast(b.op("Min", [b.op("Max", [v, _f(b, 0.0)]), size_f]), I64))
    return clamp(lo), clamp(hi)


def _average(ctx: LayerContext, data: oir.Value, rois: oir.Value, batch: oir.Value, d: int, g: int,
             scale: float) -> oir.Value:
    b = ctx.b
    height, width = _hw(b, data)
    sc = _f(b, scale)
    x1, y1 = (b.op("Mul", [round_half_away(b, _col(b, rois, k)), sc]) for k in (1, 2))
    x2, y2 = (b.op("Mul", [round_half_away(b, b.op("Add", [_col(b, rois, k), _f(b, 1.0)])), sc]) for k in (3, 4))
    rw = b.op("Max", [b.op("Sub", [x2, x1]), _f(b, 0.1)])
    rh = b.op("Max", [b.op("Sub", [y2, y1]), _f(b, 0.1)])
    gf = _f(b, float(g))
    hs, he = _avg_bounds(b, y1, b.op("Div", [rh, gf]), g, height)  # [R, G]
    ws, we = _avg_bounds(b, x1, b.op("Div", [rw, gf]), g, width)
    yy = b.reshape(b.op("Range", [b.i64(0), height, b.i64(1)]), [1, 1, -1])
    xx = b.reshape(b.op("Range", [b.i64(0), width, b.i64(1)]), [1, 1, -1])
    inside = (lambda v, lo, hi: b.cast(b.op("And", [b.op("GreaterOrEqual", [v, b.unsqueeze(lo, [2])]),
                                                     b.op("Less", [v, b.unsqueeze(hi, [2])])]), F32))
    rows, cols = inside(yy, hs, he), inside(xx, ws, we)  # [R, G, H], [R, G, W]
    area = b.cast(b.op("Mul", [b.unsqueeze(b.op("Sub", [he, hs]), [2]), b.unsqueeze(b.op("Sub", [we, ws]), [1])]),
                  F32)  # [R, G(h), G(w)]

    name = ctx.layer.name or f"psroi_pooling_{ctx.layer.id}"
    cb, it, cond = b.loop_body(name)
    x = cb.op("Gather", [data, cb.op("Gather", [batch, it], {"axis": 0})], {"axis": 0})  # [C, H, W]
    x = cb.reshape(x, cb.concat([cb.i64([d, g, g]), cb.shape_of(x, 1, 3)], 0))  # [D, G(h), G(w), H, W]
    col = cb.reshape(cb.op("Gather", [cols, it], {"axis": 0}), [1, 1, g, 1, -1])
    row = cb.reshape(cb.op("Gather", [rows, it], {"axis": 0}), [1, g, 1, -1])
    t = cb.reduce("ReduceSum", cb.op("Mul", [x, col]), [4], keepdims=False)  # [D, G, G, H]
    s = cb.reduce("ReduceSum", cb.op("Mul", [t, row]), [3], keepdims=False)  # [D, G, G]
    a = cb.op("Gather", [area, it], {"axis": 0})
    s = cb.op("Where", [cb.op("Greater", [a, _f(cb, 0.0)]), cb.op("Div", [s, a]), _f(cb, 0.0)])
    s.type, s.shape = oir.TensorType(F32), oir.Shape([d, g, g])
    body = cb.build_loop_body(cond, [s], b.names.fresh(f"{name}/body"))
    count = b.reshape(b.shape_of(rois, 0, 1), [])
    return b.op("Loop", [count, b.const(np.array(True))], {"body": body})


class _Tap:
    """Bilinear taps along one axis at coordinates `v` known to lie in [0, size-1]: floor, min(ceil, size-1) and
    the fraction v - floor."""

    def __init__(self, b: GraphBuilder, v: oir.Value, size: oir.Value) -> None:
        low = b.op("Floor", [v])
        self.frac = b.op("Sub", [v, low])
        self.low = b.cast(low, I64)
        self.high = b.op("Min", [b.cast(b.op("Ceil", [v]), I64), b.op("Sub", [size, b.i64(1)])])


def _gather_taps(b: GraphBuilder, table: oir.Value, lead: list[oir.Value], ty: _Tap, tx: _Tap,
                 tail: list[oir.Value]) -> list[oir.Value]:
    """table[lead..., y, x, tail...] at the four taps (yl xl, yl xh, yh xl, yh xh); index parts broadcast."""
    out = []
    for yi in (ty.low, ty.high):
        for xi in (tx.low, tx.high):
            parts = lead + [yi, xi] + tail
            shape = parts[0]
            for p in parts[1:]:
                shape = b.op("Add", [shape, p])  # broadcast shape of all parts (values are discarded)
            grid = b.shape_of(shape)
            idx = b.concat([b.unsqueeze(b.op("Expand", [p, grid]), [-1]) for p in parts], -1)
            out.append(b.op("GatherND", [table, idx]))
    return out


def _bilinear(ctx: LayerContext, data: oir.Value, rois: oir.Value, batch: oir.Value, d: int, g: int, scale: float,
              bx: int, by: int) -> oir.Value:
    b = ctx.b
    height, width = _hw(b, data)
    sc = _f(b, scale)

    def coords(k0: int, k1: int, nbins: int, size: oir.Value) -> tuple[oir.Value, oir.Value]:
        """[R, nbins, G] sample coordinates and whether they lie in [0, size-1]."""
        start = b.op("Mul", [_col(b, rois, k0, 3), sc])
        end = b.op("Mul", [_col(b, rois, k1, 3), sc])
        step = b.op("Div", [b.op("Sub", [end, start]), _f(b, float(nbins))])
        i = b.const(np.arange(nbins, dtype=np.float32).reshape(1, -1, 1))
        lo = b.op("Add", [start, b.op("Mul", [i, step])])
        hi = b.op("Add", [start, b.op("Mul", [b.op("Add", [i, _f(b, 1.0)]), step])])
        last = b.cast(b.op("Sub", [size, b.i64(1)]), F32)
        if g > 1:
            scale_ = b.op("Div", [b.op("Mul", [b.op("Sub", [hi, lo]), last]), _f(b, float(g - 1))])
            p = b.const(np.arange(g, dtype=np.float32).reshape(1, 1, -1))
            v = b.op("Add", [b.op("Mul", [p, scale_]), b.op("Mul", [lo, last])])
        else:
            v = b.op("Mul", [b.op("Mul", [_f(b, 0.5), b.op("Add", [lo, hi])]), last])
        ok = b.op("And", [b.op("GreaterOrEqual", [v, _f(b, 0.0)]), b.op("LessOrEqual", [v, last])])
        return b.op("Where", [ok, v, _f(b, 0.0)]), ok

    y, oky = coords(2, 4, by, height)  # [R, by, G]
    x, okx = coords(1, 3, bx, width)  # [R, bx, G]
    # broadcast to [R, by, bx, G(h), G(w)]
    y5, oky5 = b.unsqueeze(y, [2, 4]), b.unsqueeze(oky, [2, 4])
    x5, okx5 = b.unsqueeze(x, [1, 3]), b.unsqueeze(okx, [1, 3])
    ty, tx = _Tap(b, y5, height), _Tap(b, x5, width)
    # table [N, H, W, S, D]: channel (by * bins_x + bx) * D + c
    table = b.reshape(b.op("Transpose", [data], {"perm": [0, 2, 3, 1]}), [0, 0, 0, by * bx, d])
    n5 = b.reshape(batch, [-1, 1, 1, 1, 1])
    s5 = b.const(np.arange(by * bx, dtype=np.int64).reshape(1, by, bx, 1, 1))
    tl, tr, bl, br = _gather_taps(b, table, [n5], ty, tx, [s5])  # [R, by, bx, G, G, D]
    fx, fy = b.unsqueeze(tx.frac, [-1]), b.unsqueeze(ty.frac, [-1])
    top = b.op("Add", [tl, b.op("Mul", [b.op("Sub", [tr, tl]), fx])])
    bottom = b.op("Add", [bl, b.op("Mul", [b.op("Sub", [br, bl]), fx])])
    v = b.op("Add", [top, b.op("Mul", [b.op("Sub", [bottom, top]), fy])])
    v = b.op("Where", [b.unsqueeze(b.op("And", [oky5, okx5]), [-1]), v, _f(b, 0.0)])
    acc = b.reduce("ReduceSum", v, [1, 2], keepdims=False)  # [R, G, G, D]
    acc = b.op("Div", [acc, _f(b, float(by * bx))])
    return b.op("Transpose", [acc], {"perm": [0, 3, 1, 2]})


@converter("PSROIPooling", "opset1", onnx="Loop (average: masked sums), GatherND (bilinear), Where, ReduceSum")
def psroi_pooling(ctx: LayerContext) -> oir.Value:
    b = ctx.b
    mode = ctx.attr_str("mode", "average").lower()
    if mode not in ("average", "bilinear"):
        raise ctx.error(f"unknown mode '{mode}'")
    d, g = ctx.attr_int("output_dim"), ctx.attr_int("group_size", 1)
    bx, by = ctx.attr_int("spatial_bins_x", 1), ctx.attr_int("spatial_bins_y", 1)
    if d < 1 or g < 1 or bx < 1 or by < 1:
        raise ctx.error("output_dim, group_size and spatial_bins_x/y must be positive")
    ctx.check_fits(d * g * g * bx * by, f"one ROI's {d}x{g}x{g} output over {by}x{bx} bins")
    scale = float(np.float32(ctx.attr_float("spatial_scale")))
    data, rois = _inputs(ctx)
    batch, live = live_rois(b, rois, data)
    if mode == "average":
        y = _average(ctx, data, rois, batch, d, g, scale)
    else:
        y = _bilinear(ctx, data, rois, batch, d, g, scale, bx, by)
    return _finish(ctx, y, live)


@converter("DeformablePSROIPooling", "opset1", onnx="GatherND (bilinear samples), Where, ReduceSum")
def deformable_psroi_pooling(ctx: LayerContext) -> oir.Value:
    b = ctx.b
    mode = ctx.attr_str("mode", "bilinear_deformable").lower()
    if mode != "bilinear_deformable":
        raise ctx.error(f"mode '{mode}' is not supported (OpenVINO's CPU plugin runs bilinear_deformable only)")
    d, g = ctx.attr_int("output_dim"), ctx.attr_int("group_size", 1)
    bx, by = ctx.attr_int("spatial_bins_x", 1), ctx.attr_int("spatial_bins_y", 1)
    part = ctx.attr_int("part_size", 1)
    trans_std = float(np.float32(ctx.attr_float("trans_std", 1.0)))
    if d < 1 or g < 1 or bx < 1 or by < 1 or part < 1:
        raise ctx.error("output_dim, group_size, part_size and spatial_bins_x/y must be positive")
    ctx.check_fits(d * g * g * bx * by, f"one ROI's {d}x{g}x{g} output over {by}x{bx} bins")
    scale = float(np.float32(ctx.attr_float("spatial_scale")))
    data, rois = _inputs(ctx)
    batch, live = live_rois(b, rois, data)
    height, width = _hw(b, data)
    with_offsets = len(ctx.inputs) > 2
    classes = 1
    if with_offsets:
        odims = ctx.input_dims(2)
        if len(odims) != 4 or odims[1] is None or odims[1] < 0:
            raise ctx.error("the offsets' channel count (2 x classes) must be static")
        classes = int(odims[1]) // 2
        if classes < 1 or d % classes:
            raise ctx.error(f"output_dim {d} is not a multiple of the offsets' {classes} classes")
    dpc = d // classes
    sc = _f(b, scale)
    # [R, 1(class), G, G, 1, 1] ROI geometry
    col6 = (lambda k: b.reshape(b.slice(rois, [k], [k + 1], [1]), [-1, 1, 1, 1, 1, 1]))
    half = _f(b, 0.5)
    x1, y1 = (b.op("Sub", [b.op("Mul", [round_half_away(b, col6(k)), sc]), half]) for k in (1, 2))
    x2, y2 = (b.op("Sub", [b.op("Mul", [b.op("Add", [round_half_away(b, col6(k)), _f(b, 1.0)]), sc]), half])
              for k in (3, 4))
    rw = b.op("Max", [b.op("Sub", [x2, x1]), _f(b, 0.1)])
    rh = b.op("Max", [b.op("Sub", [y2, y1]), _f(b, 0.1)])
    gf = _f(b, float(g))
    bin_w, bin_h = b.op("Div", [rw, gf]), b.op("Div", [rh, gf])
    sub_w, sub_h = b.op("Div", [bin_w, _f(b, float(bx))]), b.op("Div", [bin_h, _f(b, float(by))])
    hh = b.const(np.arange(g, dtype=np.float32).reshape(1, 1, g, 1, 1, 1))
    ww = b.const(np.arange(g, dtype=np.float32).reshape(1, 1, 1, g, 1, 1))
    w_start = b.op("Add", [b.op("Mul", [ww, bin_w]), x1])
    h_start = b.op("Add", [b.op("Mul", [hh, bin_h]), y1])
    if with_offsets:
        off = ctx.inputs[2] if ctx.input_type(2).name == "f32" else b.cast(ctx.inputs[2], F32)
        parts = np.arange(g) * part // g
        off = b.reshape(off, [0, classes, 2, part, part])
        off = b.op("Gather", [off, b.i64(parts)], {"axis": 3})
        off = b.op("Gather", [off, b.i64(parts)], {"axis": 4})  # [R, classes, 2, G, G]
        std = _f(b, trans_std)
        tx = b.op("Mul", [b.unsqueeze(b.op("Gather", [off, b.i64(0)], {"axis": 2}), [4, 5]), std])
        ty = b.op("Mul", [b.unsqueeze(b.op("Gather", [off, b.i64(1)], {"axis": 2}), [4, 5]), std])
        w_start = b.op("Add", [w_start, b.op("Mul", [tx, rw])])  # [R, classes, G, G, 1, 1]
        h_start = b.op("Add", [h_start, b.op("Mul", [ty, rh])])
    iy = b.const(np.arange(by, dtype=np.float32).reshape(1, 1, 1, 1, by, 1))
    ix = b.const(np.arange(bx, dtype=np.float32).reshape(1, 1, 1, 1, 1, bx))
    sx = b.op("Add", [w_start, b.op("Mul", [ix, sub_w])])  # [R, classes, G, G, 1, bx]
    sy = b.op("Add", [h_start, b.op("Mul", [iy, sub_h])])  # [R, classes, G, G, by, 1]
    hf, wf = b.cast(height, F32), b.cast(width, F32)
    okx = b.op("And", [b.op("GreaterOrEqual", [sx, _f(b, -0.5)]), b.op("LessOrEqual", [sx, b.op("Sub", [wf, half])])])
    oky = b.op("And", [b.op("GreaterOrEqual", [sy, _f(b, -0.5)]), b.op("LessOrEqual", [sy, b.op("Sub", [hf, half])])])
    ok = b.op("And", [okx, oky])  # [R, classes, G, G, by, bx]
    sx = b.op("Min", [b.op("Max", [sx, _f(b, 0.0)]), b.op("Sub", [wf, _f(b, 1.0)])])
    sy = b.op("Min", [b.op("Max", [sy, _f(b, 0.0)]), b.op("Sub", [hf, _f(b, 1.0)])])
    ty_, tx_ = _Tap(b, sy, height), _Tap(b, sx, width)
    # table [N, G(h), G(w), H, W, classes, D/classes]: channel ((class * dpc + c) * G + h) * G + w
    table = b.reshape(data, b.concat([b.shape_of(data, 0, 1), b.i64([classes, dpc, g, g]),
                                      b.shape_of(data, 2, 4)], 0))
    table = b.op("Transpose", [table], {"perm": [0, 3, 4, 5, 6, 1, 2]})
    n6 = b.reshape(batch, [-1, 1, 1, 1, 1, 1])
    gh = b.const(np.arange(g, dtype=np.int64).reshape(1, 1, g, 1, 1, 1))
    gw = b.const(np.arange(g, dtype=np.int64).reshape(1, 1, 1, g, 1, 1))
    cls = b.const(np.arange(classes, dtype=np.int64).reshape(1, classes, 1, 1, 1, 1))
    v11, v21, v12, v22 = _gather_taps(b, table, [n6, gh, gw], ty_, tx_, [cls])  # [R, cl, G, G, by, bx, dpc]
    fx, fy = b.unsqueeze(tx_.frac, [-1]), b.unsqueeze(ty_.frac, [-1])
    one = _f(b, 1.0)
    gx, gy = b.op("Sub", [one, fx]), b.op("Sub", [one, fy])
    val = b.op("Add", [b.op("Add", [b.op("Add", [b.op("Mul", [b.op("Mul", [gx, gy]), v11]),
                                                 b.op("Mul", [b.op("Mul", [gx, fy]), v12])]),
                                    b.op("Mul", [b.op("Mul", [fx, gy]), v21])]),
                       b.op("Mul", [b.op("Mul", [fx, fy]), v22])])
    okf = b.unsqueeze(ok, [-1])
    total = b.reduce("ReduceSum", b.op("Where", [okf, val, _f(b, 0.0)]), [4, 5], keepdims=False)  # [R,cl,G,G,dpc]
    count = b.reduce("ReduceSum", b.cast(ok, F32), [4, 5], keepdims=False)  # [R, cl, G, G]
    count = b.unsqueeze(count, [-1])
    y = b.op("Where", [b.op("Greater", [count, _f(b, 0.0)]), b.op("Div", [total, count]), _f(b, 0.0)])
    # [R, classes, G, G, dpc] -> [R, classes * dpc, G, G]
    y = b.op("Transpose", [y], {"perm": [0, 1, 4, 2, 3]})
    y = b.reshape(y, [0, d, g, g])
    return _finish(ctx, y, live)
