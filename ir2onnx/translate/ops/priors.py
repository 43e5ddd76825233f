"""Prior (anchor) generators: PriorBox-1/8 and PriorBoxClustered-1.

Every prior of a feature-map cell is a box around the cell centre: an offset (dx, dy) of the centre and half sizes
(bw, bh), known from the attributes at conversion time (up to a factor of the image height, or its square root, in
PriorBox's mxnet-like mode, scale_all_sizes=false). The grid of centres comes from the feature-map and image sizes,
which may be run-time inputs; with constant inputs the whole graph is constant and onnxruntime folds it.
Output: [2, 4 * H * W * priors], row 0 the boxes (xmin, ymin, xmax, ymax) cell by cell, row 1 the variances.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import GraphBuilder
from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.registry import converter


@dataclass(frozen=True)
class _Prior:
    bw: float  # half width (times the image height, or its root, when `scaled` says so)
    bh: float
    dx: float = 0.0
    dy: float = 0.0
    clip_each: bool = False  # fixed-size priors clamp xmin/ymin at 0 and xmax/ymax at 1
    scaled: int = 0  # 0: as is, 1: times the image height, 2: times its square root


def _f(b: GraphBuilder, v: float | list[float]) -> oir.Value:
    return b.const(np.array(v, np.float32))


def _sizes(ctx: LayerContext, i: int) -> tuple[oir.Value, oir.Value]:
    """(height, width) of a [2] size input as float32 scalars."""
    b = ctx.b
    v = b.cast(b.cast(ctx.inputs[i], oir.DataType.INT64), oir.DataType.FLOAT)  # sizes are integers (as OpenVINO reads them)
    return b.reshape(b.slice(v, [0], [1], [0]), []), b.reshape(b.slice(v, [1], [2], [0]), [])


def _variances(ctx: LayerContext, name: str) -> list[float]:
    v = ctx.attr_floats(name, [])
    if len(v) not in (0, 1, 4):
        raise ctx.error(f"{name} must have 0, 1 or 4 values, not {len(v)}")
    return v or [0.1]


def _emit(ctx: LayerContext, priors: list[_Prior], cx: oir.Value, cy: oir.Value, iw: oir.Value, ih: oir.Value,
          clip: bool, variances: list[float], declared: int | None = None) -> oir.Value:
    """cx: [W] centres, cy: [H] centres -> the [2, 4*H*W*P] output; `declared` priors per cell when OpenVINO's
    output holds fewer than the attributes generate (then the box stream is cut at that length, as OpenVINO's
    buffer cuts it)."""
    b = ctx.b
    p = len(priors)
    if p == 0:
        raise ctx.error("the attributes define no prior")
    scale = {0: _f(b, 1.0), 1: ih, 2: b.op("Sqrt", [ih])}
    bw = b.concat([b.op("Mul", [_f(b, [q.bw]), scale[q.scaled]]) for q in priors], 0)  # [P]
    bh = b.concat([b.op("Mul", [_f(b, [q.bh]), scale[q.scaled]]) for q in priors], 0)
    x = b.op("Add", [b.reshape(cx, [1, -1, 1]), _f(b, [[[q.dx for q in priors]]])])  # [1, W, P]
    y = b.op("Add", [b.reshape(cy, [-1, 1, 1]), _f(b, [[[q.dy for q in priors]]])])  # [H, 1, P]
    iwi = b.op("Div", [_f(b, 1.0), iw])
    ihi = b.op("Div", [_f(b, 1.0), ih])
    xmin = b.op("Mul", [b.op("Sub", [x, bw]), iwi])
    ymin = b.op("Mul", [b.op("Sub", [y, bh]), ihi])
    xmax = b.op("Mul", [b.op("Add", [x, bw]), iwi])
    ymax = b.op("Mul", [b.op("Add", [y, bh]), ihi])
    each = [q.clip_each for q in priors]
    if any(each):
        m = b.const(np.array(each))
        xmin, ymin = (b.op("Where", [m, b.op("Max", [v, _f(b, 0.0)]), v]) for v in (xmin, ymin))
        xmax, ymax = (b.op("Where", [m, b.op("Min", [v, _f(b, 1.0)]), v]) for v in (xmax, ymax))
    grid = b.op("Max", [b.op("Shape", [xmin]), b.op("Shape", [ymin])])  # [H, W, P]
    coords = [b.unsqueeze(b.op("Expand", [v, grid]), [-1]) for v in (xmin, ymin, xmax, ymax)]
    boxes = b.reshape(b.concat(coords, -1), [1, -1])
    if declared is not None and declared != p:
        if declared > p:
            raise ctx.error(f"OpenVINO declares {declared} priors per cell but the attributes generate {p}")
        cells = b.op("Mul", [b.shape_of(ymin, 0, 1), b.shape_of(xmin, 1, 2)])
        boxes = b.op("Slice", [boxes, b.i64([0]), b.op("Mul", [cells, b.i64([4 * declared])]), b.i64([1])])
    if clip:
        boxes = b.op("Clip", [boxes, _f(b, 0.0), _f(b, 1.0)])
    four = variances * 4 if len(variances) == 1 else variances
    count = b.reshape(b.op("Div", [b.op("Size", [boxes]), b.i64(4)]), [1])
    var = b.reshape(b.op("Tile", [_f(b, four), count]), [1, -1])
    return b.concat([boxes, var], 0)


def _declared_priors(ratios: list[float], flip: bool, min_size: list[float], max_size: list[float],
                     fixed_size: list[float], fixed_ratio: list[float], density: list[float], scale_all: bool) -> int:
    """The priors per cell OpenVINO's PriorBox shape inference counts (PriorBox::number_of_priors)."""
    unique = {1.0}
    for r in ratios:
        unique.add(round(r * 1e6) / 1e6)
        if flip:
            unique.add(round(1 / r * 1e6) / 1e6)
    total = len(unique)
    n = total * len(min_size) + len(max_size) if scale_all else total + len(min_size) - 1
    if fixed_size:
        n = total * len(fixed_size)
    for d in density:
        n += (len(fixed_ratio) if fixed_ratio else total) * (int(d) * int(d) - 1)
    return n


def _cells(fs: float, d: int, bw: float, bh: float) -> list[_Prior]:
    """The density x density fixed-size priors of one size around the cell centre."""
    shift = int(fs / d)
    # centre - fixed_size / 2 + shift / 2 + c * shift: OpenVINO's CPU plugin (and specification) halve fixed_size as
    # a float; its constant folding halves the integer part (which differs for odd sizes)
    return [_Prior(bw, bh, -fs / 2 + shift / 2 + c * shift, -fs / 2 + shift / 2 + r * shift, True)
            for r in range(d) for c in range(d)]


def _aspect_ratios(ratios: list[float], flip: bool) -> list[float]:
    out = [1.0]
    for ar in ratios:
        if not any(abs(np.float32(ar) - np.float32(e)) < 1e-6 for e in out):
            out.append(ar)
            if flip:
                out.append(float(np.float32(1.0) / np.float32(ar)))
    return out


@converter("PriorBox", "opset1", "opset8")
def prior_box(ctx: LayerContext) -> oir.Value:
    b = ctx.b
    min_size = ctx.attr_floats("min_size", [])
    max_size = ctx.attr_floats("max_size", [])
    ratios = _aspect_ratios(ctx.attr_floats("aspect_ratio", []), ctx.attr_bool("flip", False))
    fixed_size = ctx.attr_floats("fixed_size", [])
    fixed_ratio = ctx.attr_floats("fixed_ratio", [])
    density = ctx.attr_floats("density", [])
    scale_all = ctx.attr_bool("scale_all_sizes", True)
    order = ctx.attr_bool("min_max_aspect_ratios_order", True)
    step = ctx.attr_float("step", 0.0)
    offset = ctx.attr_float("offset")
    if fixed_size and len(density) < len(fixed_size):
        raise ctx.error("fixed_size needs a density per size")
    priors: list[_Prior] = []
    for s, fs in enumerate(fixed_size):
        d = int(density[s])
        fs_int = int(fs)
        if fixed_ratio:
            for ar in fixed_ratio:
                priors += _cells(fs, d, fs * 0.5 * math.sqrt(ar), fs * 0.5 / math.sqrt(ar))
        else:
            if density:
                priors += _cells(fs, d, fs_int * 0.5, fs_int * 0.5)
            for ar in ratios:
                if abs(ar - 1.0) >= 1e-6:
                    priors += _cells(fs, d, fs * 0.5 * math.sqrt(ar), fs * 0.5 / math.sqrt(ar))
    kind = 0 if scale_all else 1
    for i, ms in enumerate(min_size):
        priors.append(_Prior(ms * 0.5, ms * 0.5, scaled=kind))
        big = [_Prior(math.sqrt(ms * max_size[i]) * 0.5, math.sqrt(ms * max_size[i]) * 0.5, scaled=2 * kind)] \
            if len(max_size) > i else []
        ars: list[_Prior] = []
        if scale_all or i == len(min_size) - 1:
            base = min_size[i if scale_all else 0]
            ars = [_Prior(base * 0.5 * math.sqrt(ar), base * 0.5 / math.sqrt(ar), scaled=kind)
                   for ar in ratios if abs(ar - 1.0) >= 1e-6]
        priors += big + ars if order else ars + big
    fh, fw = _sizes(ctx, 0)
    ih, iw = _sizes(ctx, 1)
    cols = b.cast(b.op("Range", [b.i64(0), b.cast(fw, oir.DataType.INT64), b.i64(1)]), oir.DataType.FLOAT)
    rows = b.cast(b.op("Range", [b.i64(0), b.cast(fh, oir.DataType.INT64), b.i64(1)]), oir.DataType.FLOAT)
    if not scale_all and step != 0:  # mxnet-like: the step is relative to the image height
        st = b.op("Div", [ih, fh]) if step == -1 else b.op("Mul", [_f(b, step), ih])
        cx = b.op("Mul", [b.op("Add", [cols, _f(b, offset)]), st])
        cy = b.op("Mul", [b.op("Add", [rows, _f(b, offset)]), st])
    elif step == 0:  # cells of the image divided evenly, centred (the offset is not used)
        cx = b.op("Mul", [b.op("Add", [cols, _f(b, 0.5)]), b.op("Div", [iw, fw])])
        cy = b.op("Mul", [b.op("Add", [rows, _f(b, 0.5)]), b.op("Div", [ih, fh])])
    else:
        cx = b.op("Mul", [b.op("Add", [cols, _f(b, offset)]), _f(b, step)])
        cy = b.op("Mul", [b.op("Add", [rows, _f(b, offset)]), _f(b, step)])
    declared = _declared_priors(ctx.attr_floats("aspect_ratio", []), ctx.attr_bool("flip", False), min_size, max_size,
                                fixed_size, fixed_ratio, density, scale_all)
    return _emit(ctx, priors, cx, cy, iw, ih, ctx.attr_bool("clip", False), _variances(ctx, "variance"), declared)


@converter("PriorBoxClustered", "opset1")
def prior_box_clustered(ctx: LayerContext) -> oir.Value:
    b = ctx.b
    widths = ctx.attr_floats("width", [])
    heights = ctx.attr_floats("height", [])
    if len(widths) != len(heights):
        raise ctx.error("width and height must list as many values")
    priors = [_Prior(w / 2.0, h / 2.0) for w, h in zip(widths, heights)]
    step = ctx.attr_float("step", 0.0)
    step_w = ctx.attr_float("step_w", 0.0) or step
    step_h = ctx.attr_float("step_h", 0.0) or step
    offset = ctx.attr_float("offset")
    fh, fw = _sizes(ctx, 0)
    ih, iw = _sizes(ctx, 1)
    cols = b.cast(b.op("Range", [b.i64(0), b.cast(fw, oir.DataType.INT64), b.i64(1)]), oir.DataType.FLOAT)
    rows = b.cast(b.op("Range", [b.i64(0), b.cast(fh, oir.DataType.INT64), b.i64(1)]), oir.DataType.FLOAT)
    if step_w == 0 and step_h == 0:
        sw, sh = b.op("Div", [iw, fw]), b.op("Div", [ih, fh])
    else:
        sw, sh = _f(b, step_w), _f(b, step_h)
    cx = b.op("Mul", [b.op("Add", [cols, _f(b, offset)]), sw])
    cy = b.op("Mul", [b.op("Add", [rows, _f(b, offset)]), sh])
    return _emit(ctx, priors, cx, cy, iw, ih, ctx.attr_bool("clip", False), _variances(ctx, "variance"))
