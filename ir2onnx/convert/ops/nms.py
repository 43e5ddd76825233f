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
* Soft NMS (soft_nms_sigma != 0) rescores boxes one selection at a time; no ONNX op does that, so a non-zero or
  run-time sigma is refused.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from ir2onnx.convert.builder import onnx_dtype
from ir2onnx.convert.context import LayerContext, mark_runtime_dims
from ir2onnx.convert.registry import converter

_BELOW_ONE = np.float32(1 - 2**-24)  # the largest float32 below 1


def _input(ctx: LayerContext, i: int, default: float, dtype: ir.DataType) -> ir.Value:
    b = ctx.b
    if len(ctx.inputs) <= i or ctx.inputs[i] is None:
        return b.const(np.array([default], np.int64 if dtype == ir.DataType.INT64 else np.float32))
    return b.reshape(b.cast(ctx.inputs[i], dtype), [1])


@converter("NonMaxSuppression", "opset1", "opset3", "opset4", "opset5", "opset9")
def non_max_suppression(ctx: LayerContext) -> list[ir.Value]:
    b = ctx.b
    f32, i64 = ir.DataType.FLOAT, ir.DataType.INT64
    version = int(ctx.layer.version[5:]) if ctx.layer.version.startswith("opset") else 1
    if len(ctx.inputs) > 5:
        sigma = ctx.const(5)
        if sigma is None:
            raise ctx.error("soft_nms_sigma is a run-time input: soft NMS (sigma != 0) has no ONNX equivalent, so "
                            "the conversion needs it to be a constant 0")
        if float(sigma.reshape(-1)[0]) != 0.0:
            raise ctx.error(f"soft NMS (soft_nms_sigma={float(sigma.reshape(-1)[0])}) has no ONNX equivalent")
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
    sel = b.op("NonMaxSuppression", [boxes, scores, max_out, iou, score_thr],
               {"center_point_box": int(encoding == "center")})
    sel_scores = b.op("GatherND", [scores, sel])
    if ctx.attr_bool("sort_result_descending", True):
        k = b.shape_of(sel, 0, 1)
        _, order = b.op_multi("TopK", [sel_scores, k], {"axis": 0, "largest": 1, "sorted": 1}, outputs=2)
        sel = b.op("Gather", [sel, order], {"axis": 0})
        sel_scores = b.op("Gather", [sel_scores, order], {"axis": 0})
    out_et = ctx.attr_type("output_type") if version >= 3 and "output_type" in ctx.layer.data else None
    idx_type = onnx_dtype(out_et) if out_et is not None else i64
    indices = sel if idx_type == i64 else b.cast(sel, idx_type)
    outs = [mark_runtime_dims(indices)]
    if version >= 5:
        triples = b.concat([b.cast(b.slice(sel, [0], [2], [1]), f32), b.unsqueeze(sel_scores, [1])], 1)
        score_et = ctx.output_type(1)  # the thresholds' type (f32 also for f16 boxes)
        if score_et.name != "f32":
            triples = b.cast(triples, onnx_dtype(score_et))
        valid = b.shape_of(sel, 0, 1)
        outs += [mark_runtime_dims(triples), valid if idx_type == i64 else b.cast(valid, idx_type)]
    return outs
