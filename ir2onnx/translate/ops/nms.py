"""NonMaxSuppression v1/v3/v4/v5/v9 -> ONNX NonMaxSuppression, adjusted to OpenVINO's semantics.

What OpenVINO's CPU plugin does (established by experiment) and how the ONNX form matches it:
* A box is suppressed when IoU >= iou_threshold; ONNX suppresses when IoU > threshold. For 0 < t <= 1 the threshold
  handed to ONNX is the float32 just below t (t * (1 - 2^-24) rounds to it); above 1 nothing is suppressed (ONNX
  threshold 1). For t <= 0 every box suppresses every other one (even disjoint boxes have IoU 0 >= t), so each
  class keeps only its best box: max_output_boxes_per_class is capped at 1 (onnxruntime refuses t < 0).
* A box is a candidate when its score > score_threshold (as ONNX); absent thresholds are 0.
* Within a class boxes are taken by descending score, ties by lower box index (as onnxruntime).
* Every version returns only the selected rows (the plugin's outputs have a data-dependent row count, also for
  v1-v4 whose shape inference declares a padded static shape).
* sort_result_descending=true orders all rows by descending score across batches and classes, ties keeping the
  (batch, class) order: a stable sort (ONNX TopK breaks ties by lower index).
* soft_nms_sigma <= 0 is plain NMS; sigma > 0 (or a run-time sigma) is soft NMS, an ONNX Loop (nms_soft.py). Its
  rows of equal score are sorted by batch, class and box index (a box may be selected before a lower-indexed one of
  the same final score).
"""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import onnx_dtype
from ir2onnx.translate.context import LayerContext, mark_runtime_dims
from ir2onnx.translate.ops.nms_soft import soft_nms
from ir2onnx.translate.registry import converter

_BELOW_ONE = np.float32(1 - 2**-24)  # the largest float32 below 1


def _input(ctx: LayerContext, i: int, default: float, dtype: oir.DataType) -> oir.Value:
    b = ctx.b
    if len(ctx.inputs) <= i or ctx.inputs[i] is None:
        return b.const(np.array([default], np.int64 if dtype == oir.DataType.INT64 else np.float32))
    return b.reshape(b.cast(ctx.inputs[i], dtype), [1])


def _hard_nms(ctx: LayerContext, boxes: oir.Value, scores: oir.Value, max_out: oir.Value, score_thr: oir.Value,
              center: bool) -> tuple[oir.Value, oir.Value]:
    """Plain NMS through ONNX NonMaxSuppression: selected rows [K, 3] (int64) and their scores [K], sorted when
    sort_result_descending."""
    b = ctx.b
    f32 = oir.DataType.FLOAT
    iou_c = ctx.const(3) if len(ctx.inputs) > 3 else np.zeros(1, np.float32)
    if iou_c is not None:
        t = np.float32(iou_c.reshape(-1)[0])
        if t <= 0:
            iou = b.const(np.zeros(1, np.float32))
            max_out = b.op("Min", [max_out, b.i64([1])])
        else:
            iou = b.const(np.array([min(np.nextafter(t, np.float32(0)), np.float32(1))], np.float32))
    else:
        t = _input(ctx, 3, 0.0, f32)
        iou = b.op("Clip", [b.op("Mul", [t, b.const(_BELOW_ONE)]), b.const(np.float32(0)), b.const(np.float32(1))])
        max_out = b.op("Where", [b.op("LessOrEqual", [t, b.const(np.float32(0))]),
                                 b.op("Min", [max_out, b.i64([1])]), max_out])
    sel = b.op("NonMaxSuppression", [boxes, scores, max_out, iou, score_thr], {"center_point_box": int(center)})
    sel_scores = b.op("GatherND", [scores, sel])
    if ctx.attr_bool("sort_result_descending", True):
        k = b.shape_of(sel, 0, 1)
        _, order = b.op_multi("TopK", [sel_scores, k], {"axis": 0, "largest": 1, "sorted": 1}, outputs=2)
        sel = b.op("Gather", [sel, order], {"axis": 0})
        sel_scores = b.op("Gather", [sel_scores, order], {"axis": 0})
    return sel, sel_scores


@converter("NonMaxSuppression", "opset1", "opset3", "opset4", "opset5", "opset9",
           onnx="NonMaxSuppression, GatherND, TopK; soft NMS (v5/v9): Loop (one selection a step), ArgMax, "
                "Exp, Compress, TopK")
def non_max_suppression(ctx: LayerContext) -> list[oir.Value]:
    b = ctx.b
    f32, i64 = oir.DataType.FLOAT, oir.DataType.INT64
    sigma_c = ctx.const(5) if len(ctx.inputs) > 5 else np.zeros(1, np.float32)
    soft = sigma_c is None or float(sigma_c.reshape(-1)[0]) > 0  # sigma <= 0 is plain NMS
    encoding = ctx.attr_str("box_encoding", "corner").lower()
    if encoding not in ("corner", "center"):
        raise ctx.error(f"unknown box_encoding '{encoding}'")
    boxes, scores = ctx.inputs[0], ctx.inputs[1]
    float_et = ctx.input_type(0)
    if float_et.name != "f32":
        boxes, scores = b.cast(boxes, f32), b.cast(scores, f32)
    elif ctx.input_type(1).name != "f32":
        scores = b.cast(scores, f32)
    max_out = _input(ctx, 2, 0, i64)
    score_thr = _input(ctx, 4, 0.0, f32)
    if soft:
        sel, sel_scores = soft_nms(b, ctx.layer.name or f"nms_{ctx.layer.id}", boxes, scores, max_out,
                                   _input(ctx, 3, 0.0, f32), score_thr, _input(ctx, 5, 0.0, f32),
                                   encoding == "center")
        if ctx.attr_bool("sort_result_descending", True):
            # rows of equal score are ordered by batch, class, box: sort by box within a class first
            k = b.shape_of(sel, 0, 1)
            n_boxes, n_classes = b.shape_of(boxes, 1, 2), b.shape_of(scores, 1, 2)
            bat, cls, box = (b.op("Gather", [sel, b.i64(j)], {"axis": 1}) for j in range(3))
            key = b.op("Add", [b.op("Mul", [b.op("Add", [b.op("Mul", [bat, n_classes]), cls]), n_boxes]), box])
            _, order = b.op_multi("TopK", [key, k], {"axis": 0, "largest": 0, "sorted": 1}, outputs=2)
            sel, sel_scores = (b.op("Gather", [v, order], {"axis": 0}) for v in (sel, sel_scores))
            _, order = b.op_multi("TopK", [sel_scores, k], {"axis": 0, "largest": 1, "sorted": 1}, outputs=2)
            sel, sel_scores = (b.op("Gather", [v, order], {"axis": 0}) for v in (sel, sel_scores))
    else:
        sel, sel_scores = _hard_nms(ctx, boxes, scores, max_out, score_thr, encoding == "center")
    out_et = ctx.attr_type("output_type") if ctx.version >= 3 and "output_type" in ctx.layer.data else None
    idx_type = onnx_dtype(out_et) if out_et is not None else i64
    indices = sel if idx_type == i64 else b.cast(sel, idx_type)
    outs = [mark_runtime_dims(indices)]
    if ctx.version >= 5:
        triples = b.concat([b.cast(b.slice(sel, [0], [2], [1]), f32), b.unsqueeze(sel_scores, [1])], 1)
        score_et = ctx.output_type(1)  # the thresholds' type (f32 also for f16 boxes)
        if score_et.name != "f32":
            triples = b.cast(triples, onnx_dtype(score_et))
        valid = b.shape_of(sel, 0, 1)
        outs += [mark_runtime_dims(triples), valid if idx_type == i64 else b.cast(valid, idx_type)]
    return outs
