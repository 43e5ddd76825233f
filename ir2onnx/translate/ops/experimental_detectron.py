"""ExperimentalDetectron* ops of opset6 (Detectron's Mask R-CNN blocks), as OpenVINO's CPU plugin computes them.

* PriorGridGenerator: every prior moved to each cell centre of an h x w grid, (w + 0.5) * step added in float32;
  h / w of 0 take the feature map's, stride 0 the image size over the grid size; rows in (h, w, prior) order. The
  output has the feature map's size whatever h and w: a smaller grid fills its first rows and the rest, left
  unwritten by OpenVINO (undefined in the op's specification), is zero here.
* TopKROIs: the max_rois ROIs of highest probability in std::sort's order (partial_sort.py: equal probabilities as
  libstdc++'s introsort leaves them); rows past the number of ROIs, unwritten by OpenVINO, are zero.
* ROIFeatureExtractor: each ROI pooled (ROIAlign, avg) on the pyramid level its area picks, as ONNX RoiAlign on
  ROIs scaled beforehand in the plugin's arithmetic; ROIs of area <= 0 get zeros.
* GenerateProposalsSingleImage: anchors [H * W * A, 4] refined as GenerateProposals-9 with coordinates offset 1
  (proposals.py), scores of boxes under min_size (unscaled) zeroed, the pre_nms_count best in std::partial_sort's
  order, greedy NMS with offset 0 (zero scores take part), post_nms_count rows, zero-padded.
* DetectionOutput: boxes refined per class (deltas over deltas_weights, log sizes capped at max_delta_log_wh,
  clamped at 0 only; class 0 and ROIs with a side <= 0 give nothing), per class the scores above score_threshold
  by descending score (ties by ROI index), greedy NMS (Jaccard overlap with offset 1 > nms_threshold), the first
  post_nms_count kept; the detections in class order, or, when more than max_detections_per_image,
  std::partial_sort's order by score (ties by ROI index); zero-padded. im_info and class_agnostic_box_regression
  are not used by the plugin.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import GraphBuilder, onnx_dtype
from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.ops.partial_sort import partial_sort_order, partial_sort_pairs, sort_order
from ir2onnx.translate.ops.proposals import Overlap, nms_loop, proposal_iou, refine_anchors
from ir2onnx.translate.registry import converter

F32, I64 = oir.DataType.FLOAT, oir.DataType.INT64


def _f(b: GraphBuilder, v: float) -> oir.Value:
    return b.const(np.array(v, np.float32))


def _f32_inputs(ctx: LayerContext, count: int) -> list[oir.Value]:
    return [ctx.float32_input(i) for i in range(count)]


def _to_output(ctx: LayerContext, v: oir.Value, i: int = 0) -> oir.Value:
    et = ctx.output_type(i)
    return v if et.name == "f32" else ctx.b.cast(v, onnx_dtype(et))


@converter("ExperimentalDetectronPriorGridGenerator", "opset6", onnx="Range, Mul, Add, Div")
def prior_grid_generator(ctx: LayerContext) -> oir.Value:
    b = ctx.b
    priors = _f32_inputs(ctx, 1)[0]
    grid_h, grid_w = ctx.attr_int("h", 0), ctx.attr_int("w", 0)
    stride_x, stride_y = ctx.attr_float("stride_x", 0.0), ctx.attr_float("stride_y", 0.0)
    h = b.i64([grid_h]) if grid_h else b.shape_of(ctx.inputs[1], 2, 3)
    w = b.i64([grid_w]) if grid_w else b.shape_of(ctx.inputs[1], 3, 4)

    def step(stride: float, image_axis: int, cells: oir.Value) -> oir.Value:
        if stride:
            return _f(b, stride)
        size = b.cast(b.shape_of(ctx.inputs[2], image_axis, image_axis + 1), F32)
        return b.op("Div", [size, b.cast(cells, F32)])

    def centres(cells: oir.Value, stride: float, image_axis: int) -> oir.Value:
        pos = b.op("Add", [b.cast(b.op("Range", [b.i64(0), b.reshape(cells, []), b.i64(1)]), F32), _f(b, 0.5)])
        return b.op("Mul", [step(stride, image_axis, cells), pos])

    cx = b.reshape(centres(w, stride_x, 3), [1, -1, 1])  # [1, W, 1]
    cy = b.reshape(centres(h, stride_y, 2), [-1, 1, 1])  # [H, 1, 1]
    px0, py0, px1, py1 = (b.reshape(b.slice(priors, [k], [k + 1], [1]), [1, 1, -1]) for k in range(4))
    cols = [b.op("Add", [px0, cx]), b.op("Add", [py0, cy]), b.op("Add", [px1, cx]), b.op("Add", [py1, cy])]
    n_priors = b.shape_of(priors, 0, 1)
    full = b.concat([h, w, n_priors, b.i64([1])], 0)
    grid = b.op("Concat", [b.op("Expand", [b.unsqueeze(c, [3]), full]) for c in cols], {"axis": 3})
    rows = b.reshape(grid, [-1, 4])
    fh, fw = b.shape_of(ctx.inputs[1], 2, 3), b.shape_of(ctx.inputs[1], 3, 4)
    if grid_h or grid_w:
        # the output keeps the feature map's size; a smaller grid fills its first rows, zeros the rest
        total = b.op("Mul", [b.op("Mul", [fh, fw]), n_priors])
        rows = b.op("Pad", [rows, b.concat([b.i64([0, 0]), b.op("Sub", [total, b.shape_of(rows, 0, 1)]), b.i64([0])],
                                           0)])
    out = rows if ctx.attr_bool("flatten", True) else b.reshape(rows, b.concat([fh, fw, n_priors, b.i64([4])], 0))
    return _to_output(ctx, out)


@converter("ExperimentalDetectronTopKROIs", "opset6", onnx="TopK, Gather, Loop (std::sort's order of equal scores)")
def top_k_rois(ctx: LayerContext) -> oir.Value:
    b = ctx.b
    rois, probs = _f32_inputs(ctx, 2)
    max_rois = ctx.attr_int("max_rois", 0)
    n = b.shape_of(rois, 0, 1)
    k = b.op("Min", [n, b.i64([max_rois])])
    name = ctx.layer.name or f"topk_rois_{ctx.layer.id}"
    order = sort_order(b, name, b.reshape(probs, [-1]), k)
    top = b.op("Gather", [rois, order], {"axis": 0})
    # fewer ROIs than max_rois: the remaining rows are zero
    top = b.op("Pad", [top, b.concat([b.i64([0, 0]), b.op("Sub", [b.i64([max_rois]), k]), b.i64([0])], 0)])
    return _to_output(ctx, top)


def _pyramid_levels(b: GraphBuilder, rois: oir.Value, levels: int) -> oir.Value:
    """[R] int64 pyramid level of each ROI: floor(log2(sqrt(area) / 224 + 1e-6) + 2) clamped to the levels, and
    `levels` (no level) for an area <= 0. log2 is taken in double and rounded to float32, as a correctly rounded
    log2f gives it (a float32 ln / ln 2 can miss the floor near powers of two)."""
    x0, y0, x1, y1 = (b.reshape(b.slice(rois, [k], [k + 1], [1]), [-1]) for k in range(4))
    area = b.op("Mul", [b.op("Sub", [x1, x0]), b.op("Sub", [y1, y0])])
    v = b.op("Add", [b.op("Div", [b.op("Sqrt", [area]), _f(b, 224.0)]), _f(b, 1e-6)])
    log2 = b.op("Div", [b.op("Log", [b.cast(v, oir.DataType.DOUBLE)]), b.const(np.array(np.log(2.0)))])
    level = b.op("Floor", [b.op("Add", [b.cast(log2, F32), _f(b, 2.0)])])
    level = b.op("Clip", [level, _f(b, 0.0), _f(b, float(levels - 1))])
    return b.cast(b.op("Where", [b.op("Greater", [area, _f(b, 0.0)]), level, _f(b, float(levels))]), I64)


@converter("ExperimentalDetectronROIFeatureExtractor", "opset6", onnx="RoiAlign, Log, Sqrt, Where")
def roi_feature_extractor(ctx: LayerContext) -> list[oir.Value]:
    b = ctx.b
    inputs = _f32_inputs(ctx, len(ctx.inputs))
    rois, maps = inputs[0], inputs[1:]
    size = ctx.attr_int("output_size")
    ratio = ctx.attr_int("sampling_ratio", 0)
    scales = ctx.attr_ints("pyramid_scales")
    aligned = ctx.attr_bool("aligned", False)
    if len(scales) < len(maps):
        raise ctx.error(f"{len(maps)} feature maps but {len(scales)} pyramid_scales")
    level = _pyramid_levels(b, rois, len(maps))
    zeros = b.op("ConstantOfShape", [b.shape_of(rois, 0, 1)], {"value": np.zeros(1, np.int64)})
    out = None
    for i, fmap in enumerate(maps):
        # ROIs scaled as the plugin does (x * (1 / scale) - offset), then ONNX RoiAlign at scale 1 without offset
        # (output_half_pixel also forces sides of at least 1)
        scaled = b.op("Mul", [rois, _f(b, float(np.float32(1.0) / np.float32(scales[i])))])
        if aligned:
            scaled = b.op("Sub", [scaled, _f(b, 0.5)])
        pooled = b.op("RoiAlign", [fmap, scaled, zeros],
                      {"mode": "avg", "output_height": size, "output_width": size, "sampling_ratio": ratio,
                       "spatial_scale": 1.0, "coordinate_transformation_mode": "output_half_pixel"})
        on = b.reshape(b.op("Equal", [level, b.i64(i)]), [-1, 1, 1, 1])
        out = b.op("Where", [on, pooled, out if out is not None else _f(b, 0.0)])
    outs = [_to_output(ctx, out)]
    if len(ctx.layer.outputs) > 1:
        outs.append(_to_output(ctx, b.identity(rois), 1))
    return outs


@converter("ExperimentalDetectronGenerateProposalsSingleImage", "opset6",
           onnx="Loop (greedy NMS), TopK, GatherElements, Exp, Where, Pad")
def generate_proposals_single_image(ctx: LayerContext) -> list[oir.Value]:
    b = ctx.b
    info, anchors, deltas, scores = _f32_inputs(ctx, 4)
    pre_n, post_n = ctx.attr_int("pre_nms_count"), ctx.attr_int("post_nms_count")
    a_dim, h_dim, w_dim = (b.shape_of(scores, i, i + 1) for i in range(3))
    score = b.reshape(b.op("Transpose", [scores], {"perm": [1, 2, 0]}), [1, -1])  # (h, w, anchor) order
    d = b.op("Transpose", [b.reshape(deltas, b.concat([a_dim, b.i64([4]), h_dim, w_dim], 0))], {"perm": [2, 3, 0, 1]})
    dx, dy, dlw, dlh = (b.reshape(b.slice(d, [k], [k + 1], [3]), [1, -1]) for k in range(4))
    ax0, ay0, ax1, ay1 = (b.reshape(b.slice(anchors, [k], [k + 1], [1]), [1, -1]) for k in range(4))
    info = b.reshape(info, [-1])
    img_h, img_w = (b.reshape(b.op("Gather", [info, b.i64([j])]), [1, 1]) for j in (0, 1))
    (x0, y0, x1, y1), box_w, box_h = refine_anchors(b, (ax0, ay0, ax1, ay1), (dx, dy, dlw, dlh), img_h, img_w, 1.0)
    min_size = _f(b, ctx.attr_float("min_size"))
    big = b.op("And", [b.op("LessOrEqual", [min_size, box_w]), b.op("LessOrEqual", [min_size, box_h])])
    score = b.op("Mul", [b.cast(big, F32), score])
    k = b.op("Min", [b.shape_of(score, 1, 2), b.i64([pre_n])])
    name = ctx.layer.name or f"generate_proposals_{ctx.layer.id}"
    top, order = partial_sort_order(b, name, score, k)
    boxes = [b.op("GatherElements", [v, order], {"axis": 1}) for v in (x0, y0, x1, y1)]
    sel, ok = nms_loop(b, name, boxes, post_n, ctx.attr_float("nms_threshold"), proposal_iou(0.0))
    pads = b.concat([b.i64([0, 0, 0]), b.op("Sub", [b.i64([post_n]), b.shape_of(sel, 1, 2)])], 0)
    sel = b.op("Pad", [sel, pads, b.const(np.array(0, np.int64))])
    ok = b.op("Pad", [ok, pads, b.const(np.array(False))])
    zero = _f(b, 0.0)
    cols = [b.op("Where", [ok, b.op("GatherElements", [v, sel], {"axis": 1}), zero]) for v in boxes]
    rois = b.reshape(b.op("Concat", [b.unsqueeze(c, [2]) for c in cols], {"axis": 2}), [-1, 4])
    kept = b.reshape(b.op("Where", [ok, b.op("GatherElements", [top, sel], {"axis": 1}), zero]), [-1])
    return [_to_output(ctx, rois), _to_output(ctx, kept, 1)]


def _jaccard() -> Overlap:
    """The plugin's JaccardOverlap (offset 1) of boxes given as x0, y0, x1, y1 and their precomputed areas."""

    def overlap(cb: GraphBuilder, first: list[oir.Value], others: list[oir.Value]) -> oir.Value:
        x0i, y0i, x1i, y1i, si = first
        x0j, y0j, x1j, y1j, sj = others
        one, zero = _f(cb, 1.0), _f(cb, 0.0)
        apart = cb.op("Or", [cb.op("Or", [cb.op("Greater", [x0j, x1i]), cb.op("Less", [x1j, x0i])]),
                             cb.op("Or", [cb.op("Greater", [y0j, y1i]), cb.op("Less", [y1j, y0i])])])
        w = cb.op("Add", [cb.op("Sub", [cb.op("Min", [x1i, x1j]), cb.op("Max", [x0i, x0j])]), one])
        h = cb.op("Add", [cb.op("Sub", [cb.op("Min", [y1i, y1j]), cb.op("Max", [y0i, y0j])]), one])
        empty = cb.op("Or", [apart, cb.op("Or", [cb.op("LessOrEqual", [w, zero]), cb.op("LessOrEqual", [h, zero])])])
        inter = cb.op("Mul", [w, h])
        iou = cb.op("Div", [inter, cb.op("Sub", [cb.op("Add", [sj, si]), inter])])
        return cb.op("Where", [empty, zero, iou])

    return overlap


@converter("ExperimentalDetectronDetectionOutput", "opset6",
           onnx="Loop (greedy NMS per class), TopK, GatherElements, Compress, Exp, Where, Pad")
def detection_output(ctx: LayerContext) -> list[oir.Value]:
    b = ctx.b
    rois, deltas, scores = _f32_inputs(ctx, 3)
    classes = ctx.attr_int("num_classes")
    post_n = ctx.attr_int("post_nms_count")
    max_det = ctx.attr_int("max_detections_per_image")
    weights = [float(w) for w in ctx.attr_floats("deltas_weights")]
    score_thr, nms_thr = ctx.attr_float("score_threshold"), ctx.attr_float("nms_threshold")
    # refined boxes, areas and scores [C, R]; class 0 (background) and ROIs with a side <= 0 stay 0
    x0, y0, x1, y1 = (b.reshape(b.slice(rois, [k], [k + 1], [1]), [1, -1]) for k in range(4))
    good = b.op("And", [b.op("Greater", [b.op("Sub", [x1, x0]), _f(b, 0.0)]),
                        b.op("Greater", [b.op("Sub", [y1, y0]), _f(b, 0.0)])])
    good = b.op("And", [good, b.const(np.arange(classes).reshape(-1, 1) > 0)])  # [C, R]
    one, half = _f(b, 1.0), _f(b, 0.5)
    ww = b.op("Add", [b.op("Sub", [x1, x0]), one])
    hh = b.op("Add", [b.op("Sub", [y1, y0]), one])
    ctr_x = b.op("Add", [x0, b.op("Mul", [half, ww])])
    ctr_y = b.op("Add", [y0, b.op("Mul", [half, hh])])
    d = b.op("Transpose", [b.reshape(deltas, [-1, classes, 4])], {"perm": [2, 1, 0]})  # [4, C, R]
    dx, dy, dlw, dlh = (b.op("Div", [b.squeeze(b.slice(d, [k], [k + 1], [0]), [0]), _f(b, weights[k])])
                        for k in range(4))
    cap = _f(b, ctx.attr_float("max_delta_log_wh"))
    pcx = b.op("Add", [b.op("Mul", [dx, ww]), ctr_x])
    pcy = b.op("Add", [b.op("Mul", [dy, hh]), ctr_y])
    pw = b.op("Mul", [b.op("Exp", [b.op("Min", [dlw, cap])]), ww])
    ph = b.op("Mul", [b.op("Exp", [b.op("Min", [dlh, cap])]), hh])
    zero = _f(b, 0.0)
    nx0 = b.op("Max", [zero, b.op("Sub", [pcx, b.op("Mul", [half, pw])])])
    ny0 = b.op("Max", [zero, b.op("Sub", [pcy, b.op("Mul", [half, ph])])])
    nx1 = b.op("Max", [zero, b.op("Sub", [b.op("Add", [pcx, b.op("Mul", [half, pw])]), one])])
    ny1 = b.op("Max", [zero, b.op("Sub", [b.op("Add", [pcy, b.op("Mul", [half, ph])]), one])])
    area = b.op("Mul", [b.op("Add", [b.op("Sub", [nx1, nx0]), one]), b.op("Add", [b.op("Sub", [ny1, ny0]), one])])
    score = b.op("Transpose", [scores], {"perm": [1, 0]})
    fields = [b.op("Where", [good, v, zero]) for v in (nx0, ny0, nx1, ny1, area, score)]
    # per class: candidates above the threshold by descending score (ties by ROI index), greedy NMS
    r = b.shape_of(rois, 0, 1)
    top, order = b.op_multi("TopK", [fields[5], r], {"axis": 1, "largest": 1, "sorted": 1}, outputs=2)
    boxes = [b.op("GatherElements", [v, order], {"axis": 1}) for v in fields[:5]]
    alive = b.op("And", [b.op("Greater", [top, _f(b, score_thr)]), b.const(np.arange(classes).reshape(-1, 1) > 0)])
    name = ctx.layer.name or f"detection_output_{ctx.layer.id}"
    limit = post_n if post_n >= 0 else 2**31
    sel, ok = nms_loop(b, name, boxes, limit, nms_thr, _jaccard(), alive)
    # the kept detections in class order, then within a class in NMS order
    mask = b.reshape(ok, [-1])

    def flat(v: oir.Value) -> oir.Value:
        return b.op("Compress", [b.reshape(b.op("GatherElements", [v, sel], {"axis": 1}), [-1]), mask], {"axis": 0})

    det_boxes = [flat(v) for v in boxes[:4]]
    det_score = flat(top)
    det_roi = flat(order)
    det_class = b.op("Compress", [b.reshape(b.op("Expand", [b.const(np.arange(classes).reshape(-1, 1)),
                                                            b.shape_of(sel)]), [-1]), mask], {"axis": 0})
    total = b.shape_of(det_score, 0, 1)
    keep = b.op("Min", [total, b.i64([max_det])])
    # more than max_detections_per_image: std::partial_sort by score, ties by ROI index
    def sorted_branch(bb: GraphBuilder) -> list[oir.Value]:
        return [partial_sort_pairs(bb, f"{name}/image", det_score, det_roi, bb.i64([max_det]))]

    def in_order(bb: GraphBuilder) -> list[oir.Value]:
        return [bb.op("Range", [bb.i64(0), bb.reshape(total, []), bb.i64(1)])]

    pick = b.op("If", [b.reshape(b.op("Greater", [total, b.i64([max_det])]), [])],
                {"then_branch": b.branch(f"{name}/sorted", [(I64, 1)], sorted_branch),
                 "else_branch": b.branch(f"{name}/in_order", [(I64, 1)], in_order)})
    pad = b.concat([b.i64([0]), b.op("Sub", [b.i64([max_det]), keep])], 0)

    def out(v: oir.Value, value: object) -> oir.Value:
        return b.op("Pad", [b.op("Gather", [v, pick], {"axis": 0}), pad, b.const(np.array(value))])

    out_boxes = b.op("Concat", [b.unsqueeze(out(v, np.float32(0)), [1]) for v in det_boxes], {"axis": 1})
    out_classes = b.cast(out(det_class, np.int64(0)), oir.DataType.INT32)
    out_scores = out(det_score, np.float32(0))
    return [_to_output(ctx, out_boxes), b.cast(out_classes, onnx_dtype(ctx.output_type(1))),
            _to_output(ctx, out_scores, 2)]
