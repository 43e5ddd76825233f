"""MatrixNms-8 -> pairwise IoU matrices and decays over each class's candidates (no loop), as OpenVINO's CPU plugin
computes them.

Per batch and class (the background_class skipped): candidates are the boxes whose score > score_threshold, by
descending score, the first nms_top_k of them (all for -1). For candidate i, with IoU(i, j) of earlier candidates j
and max_iou(j) the largest IoU of j with a candidate before it (0 for the first):
  decay(i) = min(1, min_j f(IoU(i, j), max_iou(j))), linear f = (1 - iou) / (1 - max_iou + 1e-10) (in double),
  gaussian f = exp((max_iou^2 - iou^2) * gaussian_sigma);
and it is kept with score decay(i) * score(i) when that is > post_threshold. Boxes are (x1, y1, x2, y2) as given;
disjoint boxes have IoU 0, a box with x2 < x1 or y2 < y1 has area 0, normalized=false adds 1 to every extent.
The rows are then ordered and cut as nms_rows.py describes ("classid" orders by class only across batches).
Candidates are ordered by std::partial_sort on the score alone, whose order among equal scores is that of libstdc++'s
heap algorithms: nms_heap.py replays them when a row has equal candidate scores.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import GraphBuilder
from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.ops.nms_heap import partial_sort
from ir2onnx.translate.ops.nms_rows import emit_outputs, flatten_selected, read_inputs
from ir2onnx.translate.registry import converter

F32, F64, I64 = oir.DataType.FLOAT, oir.DataType.DOUBLE, oir.DataType.INT64


def _iou_matrix(b: GraphBuilder, boxes: list[oir.Value], norm: float) -> oir.Value:
    """boxes: x1, y1, x2, y2 each [B, C, M] -> IoU [B, C, M (later), M (earlier)] as MatrixNms computes it."""
    a = [b.unsqueeze(v, [3]) for v in boxes]  # [B, C, M, 1]
    o = [b.unsqueeze(v, [2]) for v in boxes]  # [B, C, 1, M]
    zero = b.const(np.float32(0))
    n = b.const(np.float32(norm))

    def area(x1: oir.Value, y1: oir.Value, x2: oir.Value, y2: oir.Value) -> oir.Value:
        invalid = b.op("Or", [b.op("Less", [x2, x1]), b.op("Less", [y2, y1])])
        w, h = b.op("Sub", [x2, x1]), b.op("Sub", [y2, y1])
        if norm:
            w, h = b.op("Add", [w, n]), b.op("Add", [h, n])
        return b.op("Where", [invalid, zero, b.op("Mul", [w, h])])

    disjoint = b.op("Or", [b.op("Or", [b.op("Greater", [o[0], a[2]]), b.op("Less", [o[2], a[0]])]),
                           b.op("Or", [b.op("Greater", [o[1], a[3]]), b.op("Less", [o[3], a[1]])])])
    w = b.op("Add", [b.op("Sub", [b.op("Min", [a[2], o[2]]), b.op("Max", [a[0], o[0]])]), n])
    h = b.op("Add", [b.op("Sub", [b.op("Min", [a[3], o[3]]), b.op("Max", [a[1], o[1]])]), n])
    inter = b.op("Mul", [w, h])
    iou = b.op("Div", [inter, b.op("Sub", [b.op("Add", [area(*a), area(*o)]), inter])])
    return b.op("Where", [disjoint, zero, iou])


@converter("MatrixNms", "opset8", onnx="TopK, pairwise IoU (Where, Min, Max, Div), ReduceMax, ReduceMin, Exp, "
                                        "Compress, stable TopK sorts, ScatterElements")
def matrix_nms(ctx: LayerContext) -> list[oir.Value]:
    b = ctx.b
    inp = read_inputs(ctx)
    score_thr = np.float32(ctx.attr_float("score_threshold", 0.0))
    post_thr = np.float32(ctx.attr_float("post_threshold", 0.0))
    sigma = np.float32(ctx.attr_float("gaussian_sigma", 2.0))
    top_k = ctx.attr_int("nms_top_k", -1)
    background = ctx.attr_int("background_class", -1)
    decay_fn = ctx.attr_str("decay_function", "linear").lower()
    if decay_fn not in ("linear", "gaussian"):
        raise ctx.error(f"unknown decay_function '{decay_fn}'")
    norm = 0.0 if ctx.attr_bool("normalized", True) else 1.0

    scores = inp.scores  # [B, C, M]
    cand = b.op("Greater", [scores, b.const(score_thr)])
    if background >= 0:
        classes = b.op("Range", [b.i64(0), b.reshape(b.shape_of(scores, 1, 2), []), b.i64(1)])
        cand = b.op("And", [cand, b.reshape(b.op("Not", [b.op("Equal", [classes, b.i64(background)])]),
                                            [1, -1, 1])])
    count = b.reduce("ReduceSum", b.cast(cand, I64), [2], keepdims=True)  # [B, C, 1]
    if top_k >= 0:  # only the first nms_top_k candidates take part
        count = b.op("Min", [count, b.i64([top_k])])
    order = partial_sort(b, scores, cand, count)
    if top_k >= 0:
        order = b.slice(order, [0], [top_k], [2])
    vals = b.op("GatherElements", [scores, order], {"axis": 2})
    m = b.shape_of(order, 2, 3)
    full = b.shape_of(scores)
    boxes = [b.op("GatherElements", [b.op("Expand", [c, full]), order], {"axis": 2}) for c in inp.coords]
    positions = b.op("Range", [b.i64(0), b.reshape(m, []), b.i64(1)])
    used = b.op("Less", [positions, count])  # [B, C, M]

    iou = _iou_matrix(b, boxes, norm)  # [B, C, M, M]
    earlier = b.op("Less", [b.unsqueeze(positions, [0]), b.unsqueeze(positions, [1])])  # [M (i), M (j)]: j < i
    zero = b.const(np.float32(0))
    iou_max = b.reduce("ReduceMax", b.op("Where", [earlier, iou, zero]), [3], keepdims=False)  # [B, C, M]
    iou_max = b.op("Max", [iou_max, zero])
    max_j = b.unsqueeze(iou_max, [2])  # [B, C, 1, M]
    if decay_fn == "linear":
        one = b.const(np.float64(1))
        num = b.op("Sub", [one, b.cast(iou, F64)])
        den = b.op("Add", [b.op("Sub", [one, b.cast(max_j, F64)]), b.const(np.float64(np.float32(1e-10)))])
        decay = b.cast(b.op("Div", [num, den]), F32)
    else:
        sq = b.op("Sub", [b.op("Mul", [max_j, max_j]), b.op("Mul", [iou, iou])])
        decay = b.op("Exp", [b.op("Mul", [sq, b.const(sigma)])])
    one32 = b.const(np.float32(1))
    decay = b.reduce("ReduceMin", b.op("Where", [earlier, decay, one32]), [3], keepdims=False)
    decay = b.op("Min", [decay, one32])
    decayed = b.op("Mul", [decay, vals])
    kept = b.op("And", [used, b.op("Greater", [decayed, b.const(post_thr)])])
    batch, cls, box, score = flatten_selected(b, kept, order, decayed)
    return emit_outputs(ctx, inp, batch, cls, box, score, classid_within_batch=False)
