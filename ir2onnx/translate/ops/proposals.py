"""Region proposal ops: Proposal-1/4, GenerateProposals-9.

Proposal follows OpenVINO's CPU plugin step by step, in float32 and in its order of arithmetic:
* anchors (ratio-major, then scale) are computed from the attributes at conversion time; framework "" is Caffe's
  convention (coordinates offset 1, rounded ratio sides), "tensorflow" has offset 0, anchors shifted by half the
  base size, unrounded sides, x/y read from (h, w) and the image height/width from img_info[1]/img_info[0];
* every (h, w, anchor) proposal is the anchor moved by the deltas, optionally clipped, with its foreground score,
  zeroed when the box is smaller than min_size * scale (img_info[2] for height, img_info[3] when given for width);
* the pre_nms_topn best are taken in std::partial_sort's order (partial_sort.py: equal scores as libstdc++
  leaves them) and a greedy NMS (an ONNX Loop, one
  selection a step, every image of the batch at once) keeps boxes in score order, suppressing those whose IoU
  (with the coordinates offset, 0 for boxes that do not touch) exceeds nms_thresh, up to post_nms_topn;
* each image's rows are [image index, x0, y0, x1, y1] (optionally clipped to the image and normalized), the rows
  after the kept ones zero, the first of them marked -1; Proposal-4 also returns the kept scores, zero-padded.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import GraphBuilder, onnx_dtype
from ir2onnx.translate.context import LayerContext, mark_runtime_dims
from ir2onnx.translate.ops.partial_sort import partial_sort_order
from ir2onnx.translate.registry import converter

F32, I64 = oir.DataType.FLOAT, oir.DataType.INT64


def _f(b: GraphBuilder, v: float) -> oir.Value:
    return b.const(np.array(v, np.float32))


def _round_half_away(x: np.ndarray) -> np.ndarray:
    """C roundf: halves away from zero (numpy rounds them to even)."""
    a = np.abs(x)
    r = np.floor(a)
    r = np.where(a - r >= np.float32(0.5), r + np.float32(1), r).astype(np.float32)
    return np.copysign(r, x).astype(np.float32)


def proposal_anchors(base_size: int, ratios: list[float], scales: list[float], tensorflow: bool) -> np.ndarray:
    """[A, 4] anchors (x0, y0, x1, y1) relative to a cell, A = len(ratios) * len(scales), ratio-major."""
    f = np.float32
    offset = f(0.0 if tensorflow else 1.0)
    base_area = f(base_size * base_size)
    half = f(base_size) * f(0.5)
    center = f(0.5) * (f(base_size) - offset)
    out = []
    for ratio in np.asarray(ratios, f):
        w = np.sqrt(base_area / ratio, dtype=f)
        if tensorflow:
            h = w * ratio
        else:
            w = _round_half_away(w)
            h = _round_half_away(w * ratio)
        for scale in np.asarray(scales, f):
            sw = f(0.5) * (w * scale - offset)
            sh = f(0.5) * (h * scale - offset)
            box = np.array([center - sw, center - sh, center + sw, center + sh], f)
            out.append(box - half if tensorflow else box)
    return np.array(out, f).reshape(-1, 4)


def _split(b: GraphBuilder, x: oir.Value, n: int, axis: int) -> list[oir.Value]:
    """x split into n single slices along `axis`, that axis squeezed."""
    return [b.squeeze(b.slice(x, [k], [k + 1], [axis]), [axis]) for k in range(n)]


def _clip(b: GraphBuilder, x: oir.Value, hi: oir.Value) -> oir.Value:
    """max(0, min(x, hi)) as the plugin writes it."""
    return b.op("Max", [_f(b, 0.0), b.op("Min", [x, hi])])


Overlap = Callable[[GraphBuilder, list[oir.Value], list[oir.Value]], oir.Value]


def proposal_iou(offset: float) -> Overlap:
    """The IoU of the plugin's Proposal-family nms_cpu: 0 for boxes that do not touch, sides + offset, clamped
    intersection."""

    def iou(cb: GraphBuilder, first: list[oir.Value], others: list[oir.Value]) -> oir.Value:
        x0i, y0i, x1i, y1i = first
        x0j, y0j, x1j, y1j = others
        off, zero = _f(cb, offset), _f(cb, 0.0)
        touch = cb.op("And", [cb.op("And", [cb.op("LessOrEqual", [x0i, x1j]), cb.op("LessOrEqual", [y0i, y1j])]),
                              cb.op("And", [cb.op("LessOrEqual", [x0j, x1i]), cb.op("LessOrEqual", [y0j, y1i])])])
        width = cb.op("Max", [zero, cb.op("Add", [cb.op("Sub", [cb.op("Min", [x1i, x1j]),
                                                                cb.op("Max", [x0i, x0j])]), off])])
        height = cb.op("Max", [zero, cb.op("Add", [cb.op("Sub", [cb.op("Min", [y1i, y1j]),
                                                                 cb.op("Max", [y0i, y0j])]), off])])
        area = cb.op("Mul", [width, height])

        def box_area(x0: oir.Value, y0: oir.Value, x1: oir.Value, y1: oir.Value) -> oir.Value:
            return cb.op("Mul", [cb.op("Add", [cb.op("Sub", [x1, x0]), off]),
                                 cb.op("Add", [cb.op("Sub", [y1, y0]), off])])

        union = cb.op("Sub", [cb.op("Add", [box_area(x0i, y0i, x1i, y1i), box_area(x0j, y0j, x1j, y1j)]), area])
        return cb.op("Where", [touch, cb.op("Div", [area, union]), zero])

    return iou


def nms_loop(b: GraphBuilder, name: str, boxes: list[oir.Value], count: int, threshold: float,
             overlap: Overlap, alive: oir.Value | None = None) -> tuple[oir.Value, oir.Value]:
    """Greedy NMS over boxes (values [N, K] each, e.g. x0, y0, x1, y1, best first; `alive` [N, K] bool, all when
    None) -> (index [N, T], valid [N, T]), 1 <= T <= count: step t takes each row's first box still alive, then
    kills the later ones whose overlap(first, others) > threshold; the kept ones of a row are the first of it."""
    start = alive
    cb = b.child()
    cb.add_input(cb.names.fresh(f"{name}/step"), I64, [])
    cb.add_input(cb.names.fresh(f"{name}/cond"), oir.DataType.BOOL, [])
    alive = cb.add_input(cb.names.fresh(f"{name}/alive"), oir.DataType.BOOL, [None, None])
    has = cb.reduce("ReduceMax", cb.cast(alive, oir.DataType.INT32), [1], keepdims=True)  # [N, 1]
    valid = cb.cast(has, oir.DataType.BOOL)
    idx = cb.op("ArgMax", [cb.cast(alive, oir.DataType.INT32)], {"axis": 1, "keepdims": 1})  # first alive, [N, 1]
    first = [cb.op("GatherElements", [v, idx], {"axis": 1}) for v in boxes]
    kill = cb.op("Less", [_f(cb, threshold), overlap(cb, first, boxes)])
    positions = cb.op("Range", [cb.i64(0), cb.shape_of(alive, 1, 2), cb.i64(1)])
    chosen = cb.op("Equal", [cb.reshape(positions, [1, -1]), idx])
    alive_out = cb.op("And", [alive, cb.op("Not", [cb.op("Or", [kill, chosen])])])
    cond_out = cb.cast(cb.reduce("ReduceMax", cb.cast(alive_out, oir.DataType.INT32), None, keepdims=False),
                       oir.DataType.BOOL)
    idx_out, valid_out = cb.squeeze(idx, [1]), cb.squeeze(valid, [1])
    for v, t, r in ((cond_out, oir.DataType.BOOL, 0), (alive_out, oir.DataType.BOOL, 2), (idx_out, I64, 1),
                    (valid_out, oir.DataType.BOOL, 1)):
        v.type, v.shape = oir.TensorType(t), oir.Shape([None] * r)
    body = cb.build([cond_out, alive_out, idx_out, valid_out], b.names.fresh(f"{name}/nms_body"))
    if start is None:
        start = b.op("ConstantOfShape", [b.shape_of(boxes[0])], {"value": np.ones(1, np.bool_)})
    # at least one step, so that the scan outputs have their shape
    _, sel, ok = b.op_multi("Loop", [b.i64(count), b.const(np.array(True)), start], {"body": body}, outputs=3)
    return b.op("Transpose", [sel], {"perm": [1, 0]}), b.op("Transpose", [ok], {"perm": [1, 0]})


@converter("Proposal", "opset1", "opset4", onnx="Loop (greedy NMS), TopK, GatherElements, Exp, Where, Pad")
def proposal(ctx: LayerContext) -> list[oir.Value]:
    b = ctx.b
    framework = ctx.attr_str("framework", "")
    if framework not in ("", "tensorflow"):
        raise ctx.error(f"framework '{framework}' is not supported by OpenVINO's Proposal (only '' or 'tensorflow')")
    tf = framework == "tensorflow"
    offset = 0.0 if tf else 1.0
    stride = ctx.attr_int("feat_stride")
    pre_n, post_n = ctx.attr_int("pre_nms_topn"), ctx.attr_int("post_nms_topn")
    anchors = proposal_anchors(ctx.attr_int("base_size"), ctx.attr_floats("ratio"), ctx.attr_floats("scale"), tf)
    a = anchors.shape[0]
    scores, deltas, info = (ctx.float32_input(i) for i in range(3))
    # foreground scores [N, H, W, A] and deltas [N, H, W, A, 4]
    n_hw = b.shape_of(scores, 0, 1)
    h_dim, w_dim = b.shape_of(scores, 2, 3), b.shape_of(scores, 3, 4)
    fg = b.op("Transpose", [b.slice(scores, b.i64([a]), b.i64([2 * a]), [1])], {"perm": [0, 2, 3, 1]})
    d = b.reshape(deltas, b.concat([n_hw, b.i64([a, 4]), h_dim, w_dim], 0))
    d = b.op("Transpose", [d], {"perm": [0, 3, 4, 1, 2]})
    dx, dy, dlw, dlh = _split(b, d, 4, 4)
    dx = b.op("Div", [dx, _f(b, ctx.attr_float("box_coordinate_scale", 1.0))])
    dy = b.op("Div", [dy, _f(b, ctx.attr_float("box_coordinate_scale", 1.0))])
    dlw = b.op("Div", [dlw, _f(b, ctx.attr_float("box_size_scale", 1.0))])
    dlh = b.op("Div", [dlh, _f(b, ctx.attr_float("box_size_scale", 1.0))])
    # image info: height, width (swapped for tensorflow), scale of height, of width (the height's when absent)
    info = b.reshape(info, [-1])
    last = b.op("Sub", [b.shape_of(info), b.i64(1)])
    img_h = b.op("Gather", [info, b.i64(1 if tf else 0)])
    img_w = b.op("Gather", [info, b.i64(0 if tf else 1)])
    scale_h = b.op("Gather", [info, b.i64(2)])
    scale_w = b.op("Gather", [info, b.reshape(b.op("Min", [last, b.i64([3])]), [])])
    min_size = _f(b, float(ctx.attr_int("min_size")))
    min_h, min_w = b.op("Mul", [min_size, scale_h]), b.op("Mul", [min_size, scale_w])
    # cell origins: x from w and y from h ("" ) or the other way round (tensorflow), [H, W, 1]
    hs = b.cast(b.op("Mul", [b.op("Range", [b.i64(0), b.reshape(h_dim, []), b.i64(1)]), b.i64(stride)]), F32)
    ws = b.cast(b.op("Mul", [b.op("Range", [b.i64(0), b.reshape(w_dim, []), b.i64(1)]), b.i64(stride)]), F32)
    hs, ws = b.reshape(hs, [-1, 1, 1]), b.reshape(ws, [1, -1, 1])
    x, y = (hs, ws) if tf else (ws, hs)
    ax0, ay0, ax1, ay1 = (b.const(anchors[:, k].copy()) for k in range(4))
    x0, y0, x1, y1 = (b.op("Add", [x, ax0]), b.op("Add", [y, ay0]), b.op("Add", [x, ax1]), b.op("Add", [y, ay1]))
    if tf:
        x0, x1 = _clip(b, x0, img_w), _clip(b, x1, img_w)
        y0, y1 = _clip(b, y0, img_h), _clip(b, y1, img_h)
    off = _f(b, offset)
    x0, y0, x1, y1 = _decode(b, (x0, y0, x1, y1), (dx, dy, dlw, dlh), off)
    if ctx.attr_bool("clip_before_nms", True):
        lim_w, lim_h = b.op("Sub", [img_w, off]), b.op("Sub", [img_h, off])
        x0, x1 = _clip(b, x0, lim_w), _clip(b, x1, lim_w)
        y0, y1 = _clip(b, y0, lim_h), _clip(b, y1, lim_h)
    box_w = b.op("Add", [b.op("Sub", [x1, x0]), off])
    box_h = b.op("Add", [b.op("Sub", [y1, y0]), off])
    big = b.op("And", [b.op("LessOrEqual", [min_w, box_w]), b.op("LessOrEqual", [min_h, box_h])])
    score = b.op("Mul", [b.cast(big, F32), fg])
    # flatten to [N, H * W * A] in (h, w, anchor) order, take the pre_nms_topn best
    flat = b.concat([n_hw, b.i64([-1])], 0)
    x0, y0, x1, y1, score = (b.reshape(v, flat) for v in (x0, y0, x1, y1, score))
    k = b.op("Min", [b.shape_of(score, 1, 2), b.i64([pre_n])])
    name = ctx.layer.name or f"proposal_{ctx.layer.id}"
    top, order = partial_sort_order(b, name, score, k)
    boxes = [b.op("GatherElements", [v, order], {"axis": 1}) for v in (x0, y0, x1, y1)]
    sel, ok = nms_loop(b, name, boxes, post_n, ctx.attr_float("nms_thresh"), proposal_iou(offset))
    # pad to post_nms_topn rows per image
    pad = b.op("Sub", [b.i64([post_n]), b.shape_of(sel, 1, 2)])
    pads = b.concat([b.i64([0, 0, 0]), pad], 0)
    sel = b.op("Pad", [sel, pads, b.const(np.array(0, np.int64))])
    ok = b.op("Pad", [ok, pads, b.const(np.array(False))])
    rows = [b.op("GatherElements", [v, sel], {"axis": 1}) for v in boxes]
    if ctx.attr_bool("clip_after_nms", False):
        rows = [_clip(b, rows[0], img_w), _clip(b, rows[1], img_h), _clip(b, rows[2], img_w), _clip(b, rows[3], img_h)]
    if ctx.attr_bool("normalize", False):
        rows = [b.op("Div", [rows[0], img_w]), b.op("Div", [rows[1], img_h]), b.op("Div", [rows[2], img_w]),
                b.op("Div", [rows[3], img_h])]
    zero = _f(b, 0.0)
    rows = [b.op("Where", [ok, r, zero]) for r in rows]
    # column 0: the image index on kept rows, -1 on the first row after them, 0 after that
    kept = b.reduce("ReduceSum", b.cast(ok, I64), [1], keepdims=True)
    slots = b.reshape(b.op("Range", [b.i64(0), b.i64(post_n), b.i64(1)]), [1, -1])
    image = b.cast(b.reshape(b.op("Range", [b.i64(0), b.reshape(n_hw, []), b.i64(1)]), [-1, 1]), F32)
    marker = b.op("Where", [b.op("Equal", [slots, kept]), _f(b, -1.0), zero])
    col0 = b.op("Where", [ok, b.op("Expand", [image, b.shape_of(ok)]), marker])
    rois = b.reshape(b.op("Concat", [b.unsqueeze(v, [2]) for v in [col0, *rows]], {"axis": 2}), [-1, 5])
    out_et = ctx.output_type(0)
    outs = [rois if out_et.name == "f32" else b.cast(rois, onnx_dtype(out_et))]
    if len(ctx.layer.outputs) > 1:
        probs = b.reshape(b.op("Where", [ok, b.op("GatherElements", [top, sel], {"axis": 1}), zero]), [-1])
        et = ctx.output_type(1)
        outs.append(probs if et.name == "f32" else b.cast(probs, onnx_dtype(et)))
    return outs


def _decode(b: GraphBuilder, anchors: tuple[oir.Value, ...], deltas: tuple[oir.Value, ...], off: oir.Value,
            cap: oir.Value | None = None) -> tuple[oir.Value, ...]:
    """Anchors (x0, y0, x1, y1) moved by deltas (dx, dy, d log w, d log h) as the plugin's proposal decoders do:
    centre and size from the anchor (its extent plus `off`), log sizes capped at `cap` when given."""
    ax0, ay0, ax1, ay1 = anchors
    dx, dy, dlw, dlh = deltas
    half = _f(b, 0.5)
    ww = b.op("Add", [b.op("Sub", [ax1, ax0]), off])
    hh = b.op("Add", [b.op("Sub", [ay1, ay0]), off])
    ctr_x = b.op("Add", [ax0, b.op("Mul", [half, ww])])
    ctr_y = b.op("Add", [ay0, b.op("Mul", [half, hh])])
    pcx = b.op("Add", [b.op("Mul", [dx, ww]), ctr_x])
    pcy = b.op("Add", [b.op("Mul", [dy, hh]), ctr_y])
    if cap is not None:
        dlw, dlh = b.op("Min", [dlw, cap]), b.op("Min", [dlh, cap])
    pw = b.op("Mul", [b.op("Exp", [dlw]), ww])
    ph = b.op("Mul", [b.op("Exp", [dlh]), hh])
    return (b.op("Sub", [pcx, b.op("Mul", [half, pw])]), b.op("Sub", [pcy, b.op("Mul", [half, ph])]),
            b.op("Add", [pcx, b.op("Mul", [half, pw])]), b.op("Add", [pcy, b.op("Mul", [half, ph])]))


def refine_anchors(b: GraphBuilder, anchors: tuple[oir.Value, ...], deltas: tuple[oir.Value, ...], img_h: oir.Value,
                   img_w: oir.Value, offset: float) -> tuple[tuple[oir.Value, ...], oir.Value, oir.Value]:
    """Anchors (x0, y0, x1, y1) moved by deltas (dx, dy, d log w, d log h; log sizes capped at log(1000 / 16)) and
    clipped to [0, image side - offset], as the plugin's refine_anchors of GenerateProposals and
    ExperimentalDetectronGenerateProposalsSingleImage -> (boxes, width, height)."""
    off = _f(b, offset)
    cap = _f(b, float(np.float32(np.log(1000.0 / 16.0))))
    x0, y0, x1, y1 = _decode(b, anchors, deltas, off, cap)
    x1, y1 = b.op("Sub", [x1, off]), b.op("Sub", [y1, off])
    lim_w, lim_h = b.op("Sub", [img_w, off]), b.op("Sub", [img_h, off])
    x0, x1 = _clip(b, x0, lim_w), _clip(b, x1, lim_w)
    y0, y1 = _clip(b, y0, lim_h), _clip(b, y1, lim_h)
    box_w = b.op("Add", [b.op("Sub", [x1, x0]), off])
    box_h = b.op("Add", [b.op("Sub", [y1, y0]), off])
    return (x0, y0, x1, y1), box_w, box_h


@converter("GenerateProposals", "opset9", onnx="Loop (greedy NMS), TopK, GatherElements, Exp, Where, Compress")
def generate_proposals(ctx: LayerContext) -> list[oir.Value]:
    """GenerateProposals-9 as the CPU plugin computes it: anchors [H, W, A, 4] moved by the deltas (log sizes capped
    at log(1000 / 16)), clipped to each image's im_info, the pre_nms_count best by score in std::partial_sort's
    order, boxes under min_size * scale never kept nor suppressing, greedy NMS (IoU > nms_threshold) up to
    post_nms_count per image, the kept rows of all images concatenated. OpenVINO accepts only nms_eta = 1."""
    b = ctx.b
    if ctx.attr_float("nms_eta", 1.0) != 1.0:
        raise ctx.error("nms_eta must be 1 (OpenVINO's GenerateProposals-9 implements no adaptive NMS threshold)")
    offset = 0.0 if ctx.attr_bool("normalized", True) else 1.0
    pre_n, post_n = ctx.attr_int("pre_nms_count"), ctx.attr_int("post_nms_count")
    info, anchors, deltas, scores = (ctx.float32_input(i) for i in range(4))
    n_dim = b.shape_of(scores, 0, 1)
    a_dim, h_dim, w_dim = b.shape_of(scores, 1, 2), b.shape_of(scores, 2, 3), b.shape_of(scores, 3, 4)
    flat = b.concat([n_dim, b.i64([-1])], 0)
    score = b.reshape(b.op("Transpose", [scores], {"perm": [0, 2, 3, 1]}), flat)  # (h, w, anchor) order
    d = b.reshape(deltas, b.concat([n_dim, a_dim, b.i64([4]), h_dim, w_dim], 0))
    dx, dy, dlw, dlh = (b.reshape(v, flat) for v in _split(b, b.op("Transpose", [d], {"perm": [0, 3, 4, 1, 2]}), 4, 4))
    ax0, ay0, ax1, ay1 = (b.reshape(v, [1, -1]) for v in _split(b, b.reshape(anchors, [-1, 4]), 4, 1))
    info = b.reshape(info, b.concat([n_dim, b.i64([-1])], 0))
    width = b.shape_of(info, 1, 2)
    img_h, img_w = (b.op("Gather", [info, b.i64([j])], {"axis": 1}) for j in (0, 1))  # [N, 1]
    # scales: the third value for both with three values, the third and fourth with four
    scale_h = b.op("Gather", [info, b.i64([2])], {"axis": 1})
    scale_w = b.op("Gather", [info, b.op("Min", [b.op("Sub", [width, b.i64([1])]), b.i64([3])])], {"axis": 1})
    min_size = _f(b, ctx.attr_float("min_size"))
    min_h, min_w = b.op("Mul", [min_size, scale_h]), b.op("Mul", [min_size, scale_w])
    (x0, y0, x1, y1), box_w, box_h = refine_anchors(b, (ax0, ay0, ax1, ay1), (dx, dy, dlw, dlh), img_h, img_w, offset)
    big = b.op("And", [b.op("LessOrEqual", [min_w, box_w]), b.op("LessOrEqual", [min_h, box_h])])
    k = b.op("Min", [b.shape_of(score, 1, 2), b.i64([pre_n])])
    name = ctx.layer.name or f"generate_proposals_{ctx.layer.id}"
    top, order = partial_sort_order(b, name, score, k)
    boxes = [b.op("GatherElements", [v, order], {"axis": 1}) for v in (x0, y0, x1, y1)]
    alive = b.op("GatherElements", [big, order], {"axis": 1})
    sel, ok = nms_loop(b, name, boxes, post_n, ctx.attr_float("nms_threshold"), proposal_iou(offset), alive)
    mask = b.reshape(ok, [-1])
    rows = b.op("Concat", [b.unsqueeze(b.op("GatherElements", [v, sel], {"axis": 1}), [2]) for v in boxes],
                {"axis": 2})
    rois = mark_runtime_dims(b.op("Compress", [b.reshape(rows, [-1, 4]), mask], {"axis": 0}))
    kept = mark_runtime_dims(b.op("Compress", [b.reshape(b.op("GatherElements", [top, sel], {"axis": 1}), [-1]),
                                               mask], {"axis": 0}))
    counts = b.reduce("ReduceSum", b.cast(ok, I64), [1], keepdims=False)
    outs = []
    for v, i in ((rois, 0), (kept, 1), (counts, 2)):
        et = ctx.output_type(i)
        outs.append(v if onnx_dtype(et) == (I64 if i == 2 else F32) else b.cast(v, onnx_dtype(et)))
    return outs
