"""MulticlassNms-8/9 -> an ONNX Loop over each class's candidates in score order (what OpenVINO's CPU plugin does).

Per batch and class (the background_class skipped):
* candidates are the boxes whose score >= score_threshold, taken by descending score (ties: lower box index); only
  the first nms_top_k of them (all for -1) are visited;
* a visited candidate is dropped when its IoU with a selected box is >= the threshold, else selected. Boxes are
  (ymin, xmin, ymax, xmax) as given (no reordering); normalized=false adds 1 to every extent; a box of area <= 0
  overlaps nothing;
* nms_eta in [0, 1): the threshold is multiplied by nms_eta after each selection while it is > 0.5, and a candidate
  whose score equals score_threshold is compared with the last selected box only (the plugin leaves its loop early);
  other nms_eta values keep the threshold fixed.
The rows are then ordered and cut as nms_rows.py describes.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import GraphBuilder
from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.ops.nms_rows import emit_outputs, flatten_selected, read_inputs
from ir2onnx.translate.registry import converter

F32, I64, BOOL = oir.DataType.FLOAT, oir.DataType.INT64, oir.DataType.BOOL


def _iou(b: GraphBuilder, cand: list[oir.Value], sel: list[oir.Value], norm: float) -> oir.Value:
    """IoU of a candidate (I) with selected boxes (J) as MulticlassNms computes it (broadcasting)."""
    zero = b.const(np.float32(0))
    n = b.const(np.float32(norm))

    def extent(hi: oir.Value, lo: oir.Value) -> oir.Value:
        return b.op("Add", [b.op("Sub", [hi, lo]), n])

    area_i = b.op("Mul", [extent(cand[2], cand[0]), extent(cand[3], cand[1])])
    area_j = b.op("Mul", [extent(sel[2], sel[0]), extent(sel[3], sel[1])])
    ih = b.op("Max", [extent(b.op("Min", [cand[2], sel[2]]), b.op("Max", [cand[0], sel[0]])), zero])
    iw = b.op("Max", [extent(b.op("Min", [cand[3], sel[3]]), b.op("Max", [cand[1], sel[1]])), zero])
    inter = b.op("Mul", [ih, iw])
    iou = b.op("Div", [inter, b.op("Sub", [b.op("Add", [area_i, area_j]), inter])])
    empty = b.op("Or", [b.op("LessOrEqual", [area_i, zero]), b.op("LessOrEqual", [area_j, zero])])
    return b.op("Where", [empty, zero, iou])


@converter("MulticlassNms", "opset8", "opset9",
           onnx="Loop (one candidate a step), TopK (stable sorts), Compress, ScatterElements, CumSum, Gather")
def multiclass_nms(ctx: LayerContext) -> list[oir.Value]:
    b = ctx.b
    inp = read_inputs(ctx)
    score_thr = np.float32(ctx.attr_float("score_threshold", 0.0))
    iou_thr = np.float32(ctx.attr_float("iou_threshold", 0.0))
    top_k = ctx.attr_int("nms_top_k", -1)
    background = ctx.attr_int("background_class", -1)
    eta = np.float32(ctx.attr_float("nms_eta", 1.0))
    adaptive = 0 <= eta < 1
    norm = 0.0 if ctx.attr_bool("normalized", True) else 1.0

    scores = inp.scores  # [B, C, M]
    cand = b.op("GreaterOrEqual", [scores, b.const(score_thr)])
    if inp.valid is not None:
        cand = b.op("And", [cand, inp.valid])
    if background >= 0:
        classes = b.op("Range", [b.i64(0), b.reshape(b.shape_of(scores, 1, 2), []), b.i64(1)])
        cand = b.op("And", [cand, b.reshape(b.op("Not", [b.op("Equal", [classes, b.i64(background)])]),
                                            [1, -1, 1])])
    m = b.shape_of(scores, 2, 3)
    vals, order = b.op_multi("TopK", [b.op("Where", [cand, scores, b.const(np.float32(-np.inf))]), m],
                             {"axis": 2, "largest": 1, "sorted": 1}, outputs=2)
    limit = b.reduce("ReduceSum", b.cast(cand, I64), [2], keepdims=True)  # [B, C, 1]
    if top_k >= 0:  # only the first nms_top_k candidates are visited
        limit = b.op("Min", [limit, b.i64([top_k])])
        vals, order = (b.slice(v, [0], [top_k], [2]) for v in (vals, order))
        m = b.shape_of(order, 2, 3)
    coords = [b.op("GatherElements", [b.op("Expand", [c, b.shape_of(scores)]), order], {"axis": 2})
              for c in inp.coords]
    positions = b.op("Range", [b.i64(0), b.reshape(m, []), b.i64(1)])

    hint = ctx.layer.name or f"multiclass_nms_{ctx.layer.id}"
    cb = b.child()
    t = cb.add_input(cb.names.fresh(f"{hint}/step"), I64, [])
    cond = cb.add_input(cb.names.fresh(f"{hint}/cond"), BOOL, [])
    selected = cb.add_input(cb.names.fresh(f"{hint}/selected"), BOOL, [None, None, None])
    thr = cb.add_input(cb.names.fresh(f"{hint}/threshold"), F32, [None, None, None])
    last = cb.add_input(cb.names.fresh(f"{hint}/last"), I64, [None, None, None])
    t1 = cb.reshape(t, [1])
    cur = [cb.op("Gather", [c, t1], {"axis": 2}) for c in coords]  # [B, C, 1] each
    over = cb.op("GreaterOrEqual", [_iou(cb, cur, coords, norm), thr])
    check = selected
    if adaptive:
        at_threshold = cb.op("LessOrEqual", [cb.op("Gather", [vals, t1], {"axis": 2}), cb.const(score_thr)])
        check = cb.op("And", [selected, cb.op("Or", [cb.op("Not", [at_threshold]),
                                                     cb.op("Equal", [positions, last])])])
    hits = cb.reduce("ReduceSum", cb.cast(cb.op("And", [check, over]), I64), [2], keepdims=True)
    take = cb.op("And", [cb.op("Less", [t, limit]), cb.op("Equal", [hits, cb.i64(0)])])  # [B, C, 1]
    sel_out = cb.op("Or", [selected, cb.op("And", [cb.op("Equal", [positions, t]), take])])
    if adaptive:
        shrink = cb.op("And", [take, cb.op("Greater", [thr, cb.const(np.float32(0.5))])])
        thr_out = cb.op("Where", [shrink, cb.op("Mul", [thr, cb.const(eta)]), thr])
        last_out = cb.op("Where", [take, t, last])
    else:
        thr_out, last_out = cb.identity(thr), cb.identity(last)
    outs = [cb.identity(cond), sel_out, thr_out, last_out]
    for v, ty, rank in zip(outs, (BOOL, BOOL, F32, I64), (0, 3, 3, 3)):
        v.type, v.shape = oir.TensorType(ty), oir.Shape([None] * rank)
    body = cb.build(outs, b.names.fresh(f"{hint}/nms_body"))
    limit_shape = b.shape_of(limit)
    none = b.op("ConstantOfShape", [b.shape_of(order)], {"value": np.zeros(1, np.bool_)})
    thr0 = b.op("ConstantOfShape", [limit_shape], {"value": np.array([iou_thr], np.float32)})
    last0 = b.op("ConstantOfShape", [limit_shape], {"value": np.zeros(1, np.int64)})
    trips = b.reduce("ReduceMax", b.op("Concat", [b.reshape(limit, [-1]), b.i64([0])], {"axis": 0}), [0],
                     keepdims=False)  # the most candidates a row visits
    selected_all, _, _ = b.op_multi("Loop", [trips, b.const(np.array(True)), none, thr0, last0], {"body": body},
                                    outputs=3)
    batch, cls, box, score = flatten_selected(b, selected_all, order, vals)
    return emit_outputs(ctx, inp, batch, cls, box, score)
