"""Soft NMS (NonMaxSuppression-5/9 with soft_nms_sigma != 0) as an ONNX Loop that selects one box per step.

What OpenVINO's CPU plugin computes (checked by experiment), per batch and class:
* candidates are the boxes whose score > score_threshold;
* sigma > 0 (Gaussian soft NMS): repeatedly the candidate with the highest current score (ties: lower box index)
  is selected; every remaining candidate's score is multiplied by exp((-0.5 / sigma) * iou * iou) with the box just
  selected and drops out once it is <= score_threshold. iou_threshold plays no part;
* sigma <= 0: plain NMS (a candidate drops out when IoU >= iou_threshold with a selected box), the same as sigma 0;
* at most min(max_output_boxes_per_class, number of boxes) boxes are selected.
The plugin evaluates the decays lazily (a priority queue), which selects the same boxes in the same order as this
eager form; the products may differ in the last bit. The IoU follows the plugin's formula (corner boxes are
normalised with min/max, centre boxes are converted; a box of area <= 0 overlaps nothing).
"""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import GraphBuilder

F32, I64, BOOL = oir.DataType.FLOAT, oir.DataType.INT64, oir.DataType.BOOL


def corners(b: GraphBuilder, boxes: oir.Value, center: bool) -> list[oir.Value]:
    """boxes [B, N, 4] -> ymin, xmin, ymax, xmax, each [B, 1, N] (NMS's two encodings)."""
    parts = [b.op("Gather", [boxes, b.i64(k)], {"axis": 2}) for k in range(4)]  # [B, N] each
    if center:
        xc, yc, w, h = parts
        half_w, half_h = (b.op("Div", [v, b.const(np.float32(2))]) for v in (w, h))
        out = [b.op("Sub", [yc, half_h]), b.op("Sub", [xc, half_w]), b.op("Add", [yc, half_h]),
               b.op("Add", [xc, half_w])]
    else:
        y0, x0, y1, x1 = parts
        out = [b.op("Min", [y0, y1]), b.op("Min", [x0, x1]), b.op("Max", [y0, y1]), b.op("Max", [x0, x1])]
    return [b.unsqueeze(v, [1]) for v in out]


def iou_with(b: GraphBuilder, cand: list[oir.Value], cand_area: oir.Value, sel: list[oir.Value],
             sel_area: oir.Value) -> oir.Value:
    """IoU of candidate boxes with selected ones (broadcasting), as OpenVINO's NMS computes it."""
    zero = b.const(np.float32(0))
    ih = b.op("Max", [b.op("Sub", [b.op("Min", [cand[2], sel[2]]), b.op("Max", [cand[0], sel[0]])]), zero])
    iw = b.op("Max", [b.op("Sub", [b.op("Min", [cand[3], sel[3]]), b.op("Max", [cand[1], sel[1]])]), zero])
    inter = b.op("Mul", [ih, iw])
    iou = b.op("Div", [inter, b.op("Sub", [b.op("Add", [cand_area, sel_area]), inter])])
    empty = b.op("Or", [b.op("LessOrEqual", [cand_area, zero]), b.op("LessOrEqual", [sel_area, zero])])
    return b.op("Where", [empty, zero, iou])


def soft_nms(b: GraphBuilder, hint: str, boxes: oir.Value, scores: oir.Value, max_out: oir.Value, iou_thr: oir.Value,
             score_thr: oir.Value, sigma: oir.Value, center: bool) -> tuple[oir.Value, oir.Value]:
    """boxes [B, N, 4], scores [B, C, N] (f32), the [1] inputs -> selected rows [K, 3] (int64: batch, class, box)
    and their scores [K], ordered by batch, class, then selection."""
    n = b.shape_of(scores, 2, 3)
    # one more box that is never a candidate, so that a step always has a box to pick (also with no boxes)
    scores = b.op("Pad", [scores, b.i64([0, 0, 0, 0, 0, 1]), b.const(np.float32(-np.inf))])
    boxes = b.op("Pad", [boxes, b.i64([0, 0, 0, 0, 1, 0]), b.const(np.float32(0))])
    ymin, xmin, ymax, xmax = corners(b, boxes, center)
    area = b.op("Mul", [b.op("Sub", [ymax, ymin]), b.op("Sub", [xmax, xmin])])
    full = b.shape_of(scores)  # [B, C, N]
    coords = [b.op("Expand", [v, full]) for v in (ymin, xmin, ymax, xmax, area)]
    trips = b.op("Max", [b.op("Min", [b.op("Max", [max_out, b.i64([0])]), n]), b.i64([1])])
    alive0 = b.op("And", [b.op("Greater", [scores, score_thr]), b.op("Greater", [max_out, b.i64([0])])])
    soft = b.op("Greater", [sigma, b.const(np.float32(0))])
    hard = b.op("Not", [soft])
    scale = b.op("Where", [soft, b.op("Div", [b.const(np.float32(-0.5)), sigma]), b.const(np.float32(0))])

    cb = b.child()
    cb.add_input(cb.names.fresh(f"{hint}/step"), I64, [])
    cond = cb.add_input(cb.names.fresh(f"{hint}/cond"), BOOL, [])
    s = cb.add_input(cb.names.fresh(f"{hint}/scores"), F32, [None, None, None])
    alive = cb.add_input(cb.names.fresh(f"{hint}/alive"), BOOL, [None, None, None])
    masked = cb.op("Where", [alive, s, cb.const(np.float32(-np.inf))])
    pick = cb.op("ArgMax", [masked], {"axis": 2, "keepdims": 1})  # [B, C, 1]: first of the highest
    valid = cb.op("GatherElements", [alive, pick], {"axis": 2})
    score = cb.op("GatherElements", [s, pick], {"axis": 2})
    sel = [cb.op("GatherElements", [v, pick], {"axis": 2}) for v in coords]
    iou = iou_with(cb, coords[:4], coords[4], sel[:4], sel[4])
    decayed = cb.op("Mul", [s, cb.op("Exp", [cb.op("Mul", [cb.op("Mul", [scale, iou]), iou])])])
    kill = cb.op("Or", [cb.op("And", [soft, cb.op("LessOrEqual", [decayed, score_thr])]),
                        cb.op("And", [hard, cb.op("GreaterOrEqual", [iou, iou_thr])])])
    positions = cb.op("Range", [cb.i64(0), cb.reshape(cb.shape_of(s, 2, 3), []), cb.i64(1)])
    picked = cb.op("Equal", [positions, pick])
    alive_out = cb.op("And", [alive, cb.op("Not", [cb.op("Or", [kill, picked])])])
    s_out = cb.op("Where", [soft, decayed, s])
    outs = [cb.identity(cond), s_out, alive_out, cb.squeeze(pick, [2]), cb.squeeze(score, [2]),
            cb.squeeze(valid, [2])]
    for v, t, r in zip(outs, (BOOL, F32, BOOL, I64, F32, BOOL), (0, 3, 3, 2, 2, 2)):
        v.type, v.shape = oir.TensorType(t), oir.Shape([None] * r)
    body = cb.build(outs, b.names.fresh(f"{hint}/soft_nms_body"))
    _, _, picks, picked_scores, valids = b.op_multi(
        "Loop", [b.reshape(trips, []), b.const(np.array(True)), scores, alive0], {"body": body}, outputs=5)
    # [T, B, C] -> rows in batch, class, step order
    perm = {"perm": [1, 2, 0]}
    picks, picked_scores, valids = (b.reshape(b.op("Transpose", [v], perm), [-1])
                                    for v in (picks, picked_scores, valids))
    dims = b.shape_of(scores, 0, 2)  # [B, C]
    t_dim = b.reshape(trips, [1])
    shape3 = b.concat([dims, t_dim], 0)
    grid = b.op("ConstantOfShape", [shape3], {"value": np.zeros(1, np.int64)})
    bi = b.op("Add", [grid, b.reshape(b.op("Range", [b.i64(0), b.reshape(b.shape_of(scores, 0, 1), []),
                                                     b.i64(1)]), [-1, 1, 1])])
    ci = b.op("Add", [grid, b.reshape(b.op("Range", [b.i64(0), b.reshape(b.shape_of(scores, 1, 2), []),
                                                     b.i64(1)]), [1, -1, 1])])
    rows = b.concat([b.reshape(bi, [-1, 1]), b.reshape(ci, [-1, 1]), b.reshape(picks, [-1, 1])], 1)
    rows = b.op("Compress", [rows, valids], {"axis": 0})
    return rows, b.op("Compress", [picked_scores, valids], {"axis": 0})
