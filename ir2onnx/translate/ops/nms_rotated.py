"""NMSRotated-13 -> an ONNX Loop over each class's candidates in score order, with the rotated IoU written in tensor
ops over a fixed number (24) of intersection points.

What OpenVINO's CPU plugin computes (its rotated-box code follows detectron2's box_iou_rotated):
* boxes are (x_ctr, y_ctr, w, h, angle in radians); clockwise=false negates the angle; the corners are
  (x -/+ sin*h/2 -/+ cos*w/2, y +/- cos*h/2 -/+ sin*w/2) and their reflections through the centre;
* the overlap polygon's vertices are the edge crossings (non-parallel edges, both parameters in [0, 1]) and the
  corners of either box inside (or on) the other; with at most 2 such points the overlap is 0, else it is the area of
  their convex hull (here: the points sorted by angle around their mean, fan areas from it);
* IoU = overlap / (w0*h0 + w1*h1 - overlap), 0 when a selected box has area <= 0;
* candidates (score > score_threshold) are visited by descending score, ties by lower index; a candidate is dropped
  when its IoU with a selected box is > iou_threshold (strictly); a candidate of area <= 0 is dropped only when
  iou_threshold < 0; the first candidate is always selected; at most max_output_boxes_per_class per class.
Outputs as NonMaxSuppression-9 (selected_indices, selected_scores, valid_outputs), sort_result_descending alike.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import GraphBuilder, onnx_dtype
from ir2onnx.translate.context import LayerContext, mark_runtime_dims
from ir2onnx.translate.ops.nms_rows import flatten_selected
from ir2onnx.translate.registry import converter

F32, I64, BOOL = oir.DataType.FLOAT, oir.DataType.INT64, oir.DataType.BOOL

XY = tuple[oir.Value, oir.Value]


def _vertices(b: GraphBuilder, box: list[oir.Value], clockwise: bool) -> XY:
    """x, y, w, h, angle (broadcastable) -> corner x and y, each [..., 4]."""
    x, y, w, h, a = box
    theta = a if clockwise else b.op("Neg", [a])
    half = b.const(np.float32(0.5))
    cos, sin = b.op("Mul", [b.op("Cos", [theta]), half]), b.op("Mul", [b.op("Sin", [theta]), half])
    mul = lambda p, q: b.op("Mul", [p, q])
    x0 = b.op("Sub", [b.op("Sub", [x, mul(sin, h)]), mul(cos, w)])
    y0 = b.op("Sub", [b.op("Add", [y, mul(cos, h)]), mul(sin, w)])
    x1 = b.op("Sub", [b.op("Add", [x, mul(sin, h)]), mul(cos, w)])
    y1 = b.op("Sub", [b.op("Sub", [y, mul(cos, h)]), mul(sin, w)])
    two = b.const(np.float32(2))
    x2, y2 = b.op("Sub", [mul(two, x), x0]), b.op("Sub", [mul(two, y), y0])
    x3, y3 = b.op("Sub", [mul(two, x), x1]), b.op("Sub", [mul(two, y), y1])
    stack = lambda vs: b.concat([b.unsqueeze(v, [-1]) for v in vs], -1)
    return stack([x0, x1, x2, x3]), stack([y0, y1, y2, y3])


def _inside(b: GraphBuilder, px: oir.Value, py: oir.Value, rect: XY, edges: XY) -> oir.Value:
    """Whether points (px, py [..., 4]) lie in (or on) the rectangle with corners `rect` and edge vectors `edges`."""
    zero = b.const(np.float32(0))
    ax, ay = (b.op("Gather", [v, b.i64([0])], {"axis": -1}) for v in rect)
    abx, aby = (b.op("Gather", [v, b.i64([0])], {"axis": -1}) for v in edges)
    dax, day = (b.op("Gather", [v, b.i64([3])], {"axis": -1}) for v in edges)
    apx, apy = b.op("Sub", [px, ax]), b.op("Sub", [py, ay])
    dot = lambda x1, y1, x2, y2: b.op("Add", [b.op("Mul", [x1, x2]), b.op("Mul", [y1, y2])])
    ap_ab = dot(apx, apy, abx, aby)
    ap_ad = b.op("Neg", [dot(apx, apy, dax, day)])
    conds = [b.op("GreaterOrEqual", [ap_ab, zero]), b.op("GreaterOrEqual", [ap_ad, zero]),
             b.op("LessOrEqual", [ap_ab, dot(abx, aby, abx, aby)]), b.op("LessOrEqual", [ap_ad, dot(dax, day, dax, day)])]
    return b.op("And", [b.op("And", [conds[0], conds[1]]), b.op("And", [conds[2], conds[3]])])


def rotated_iou(b: GraphBuilder, box0: list[oir.Value], box1: list[oir.Value], clockwise: bool) -> oir.Value:
    """IoU of rotated boxes (five broadcastable values each: x, y, w, h, angle) as OpenVINO computes it."""
    zero = b.const(np.float32(0))
    one = b.const(np.float32(1))
    p1, p2 = _vertices(b, box0, clockwise), _vertices(b, box1, clockwise)

    def edges(p: XY) -> XY:
        return tuple(b.op("Sub", [b.op("Gather", [v, b.i64([1, 2, 3, 0])], {"axis": -1}), v]) for v in p)  # type: ignore[return-value]

    v1, v2 = edges(p1), edges(p2)
    # edge i of box 0 against edge j of box 1: [..., 4 (i), 4 (j)]
    col = lambda v: b.unsqueeze(v, [-1])
    row = lambda v: b.unsqueeze(v, [-2])
    v1x, v1y, p1x, p1y = (col(v) for v in (*v1, *p1))
    v2x, v2y, p2x, p2y = (row(v) for v in (*v2, *p2))
    cross = lambda ax, ay, bx, by: b.op("Sub", [b.op("Mul", [ax, by]), b.op("Mul", [bx, ay])])
    det = cross(v2x, v2y, v1x, v1y)
    v12x, v12y = b.op("Sub", [p2x, p1x]), b.op("Sub", [p2y, p1y])
    t1 = b.op("Div", [cross(v2x, v2y, v12x, v12y), det])
    t2 = b.op("Div", [cross(v1x, v1y, v12x, v12y), det])
    in01 = lambda t: b.op("And", [b.op("GreaterOrEqual", [t, zero]), b.op("LessOrEqual", [t, one])])
    hit = b.op("And", [b.op("Greater", [b.op("Abs", [det]), b.const(np.float32(1e-14))]),
                       b.op("And", [in01(t1), in01(t2)])])
    ix = b.op("Add", [p1x, b.op("Mul", [v1x, t1])])
    iy = b.op("Add", [p1y, b.op("Mul", [v1y, t1])])
    flat = lambda v: b.op("Concat", [b.op("Gather", [v, b.i64(i)], {"axis": -2}) for i in range(4)], {"axis": -1})
    shape16 = b.shape_of(hit)  # [..., 4, 4]
    hit, ix, iy = flat(hit), flat(b.op("Expand", [ix, shape16])), flat(b.op("Expand", [iy, shape16]))
    in2 = _inside(b, p1[0], p1[1], p2, v2)  # corners of box 0 inside box 1
    in1 = _inside(b, p2[0], p2[1], p1, v1)
    shape4 = b.concat([b.shape_of(ix, 0, -1), b.i64([4])], 0)  # the pair shape, 4 points
    grow = lambda v: b.op("Expand", [v, shape4])
    px = b.concat([ix, grow(p1[0]), grow(p2[0])], -1)  # [..., 24]
    py = b.concat([iy, grow(p1[1]), grow(p2[1])], -1)
    valid = b.concat([hit, grow(in2), grow(in1)], -1)
    px, py = b.op("Where", [valid, px, zero]), b.op("Where", [valid, py, zero])  # parallel edges gave NaN
    validf = b.cast(valid, F32)
    num = b.reduce("ReduceSum", validf, [-1], keepdims=True)
    safe_num = b.op("Max", [num, one])
    cx = b.op("Div", [b.reduce("ReduceSum", b.op("Mul", [px, validf]), [-1], keepdims=True), safe_num])
    cy = b.op("Div", [b.reduce("ReduceSum", b.op("Mul", [py, validf]), [-1], keepdims=True), safe_num])
    dx, dy = b.op("Sub", [px, cx]), b.op("Sub", [py, cy])
    # a monotone stand-in for the angle of (dx, dy): [0, 4)
    l1 = b.op("Add", [b.op("Abs", [dx]), b.op("Abs", [dy])])
    p = b.op("Div", [dx, b.op("Where", [b.op("Greater", [l1, zero]), l1, one])])
    angle = b.op("Where", [b.op("GreaterOrEqual", [dy, zero]), b.op("Sub", [one, p]),
                           b.op("Add", [b.const(np.float32(3)), p])])
    key = b.op("Where", [valid, b.op("Neg", [angle]), b.const(np.float32(-10))])
    k24 = b.i64([24])
    _, order = b.op_multi("TopK", [key, k24], {"axis": -1, "largest": 1, "sorted": 1}, outputs=2)
    sx, sy = (b.op("GatherElements", [v, order], {"axis": -1}) for v in (dx, dy))
    sv = b.op("GatherElements", [valid, order], {"axis": -1})
    # invalid points (sorted last) repeat the first one: their fan triangles are empty
    fx, fy = (b.op("Gather", [v, b.i64([0])], {"axis": -1}) for v in (sx, sy))
    sx, sy = b.op("Where", [sv, sx, fx]), b.op("Where", [sv, sy, fy])
    nx, ny = (b.op("Gather", [v, b.i64(list(range(1, 24)) + [0])], {"axis": -1}) for v in (sx, sy))
    fan = b.op("Abs", [cross(sx, sy, nx, ny)])
    area = b.op("Div", [b.reduce("ReduceSum", fan, [-1], keepdims=False), b.const(np.float32(2))])
    area = b.op("Where", [b.op("LessOrEqual", [b.squeeze(num, [-1]), b.const(np.float32(2))]), zero, area])
    area0 = b.op("Mul", [box0[2], box0[3]])
    area1 = b.op("Mul", [box1[2], box1[3]])
    iou = b.op("Div", [area, b.op("Sub", [b.op("Add", [area0, area1]), area])])
    return b.op("Where", [b.op("LessOrEqual", [area1, zero]), zero, iou])


def _scalar_input(ctx: LayerContext, i: int, dtype: oir.DataType) -> oir.Value:
    return ctx.b.reshape(ctx.b.cast(ctx.inputs[i], dtype), [1])


@converter("NMSRotated", "opset13", onnx="Loop (one candidate a step), rotated IoU (Cos, Sin, TopK over 24 points), "
                                         "TopK, Compress")
def nms_rotated(ctx: LayerContext) -> list[oir.Value]:
    b = ctx.b
    clockwise = ctx.attr_bool("clockwise", True)
    boxes, scores = ctx.float32_input(0), ctx.float32_input(1)
    max_out = b.op("Max", [_scalar_input(ctx, 2, I64), b.i64([0])])
    iou_thr = _scalar_input(ctx, 3, F32)
    score_thr = _scalar_input(ctx, 4, F32)

    score_et, idx_type = ctx.output_type(1), onnx_dtype(ctx.output_type(0))
    if 0 in ctx.input_dims(1):  # no boxes (onnxruntime's shape inference of the loop body fails on 0-sized dims)
        empty = np.zeros((0, 3), np.float32)
        return [b.const(empty.astype(idx_type.numpy())), b.const(empty.astype(onnx_dtype(score_et).numpy())),
                b.const(np.zeros(1, idx_type.numpy()))]
    m = b.shape_of(scores, 2, 3)
    cand = b.op("Greater", [scores, score_thr])
    vals, order = b.op_multi("TopK", [b.op("Where", [cand, scores, b.const(np.float32(-np.inf))]), m],
                             {"axis": 2, "largest": 1, "sorted": 1}, outputs=2)
    count = b.reduce("ReduceSum", b.cast(cand, I64), [2], keepdims=True)  # [B, C, 1]
    full = b.shape_of(scores)
    # the boxes' fields in each class's visiting order [B, C, M], and as given [B, 1, M]
    fields = [b.unsqueeze(b.op("Gather", [boxes, b.i64(k)], {"axis": 2}), [1]) for k in range(5)]
    ordered = [b.op("GatherElements", [b.op("Expand", [f, full]), order], {"axis": 2}) for f in fields]
    positions = b.op("Range", [b.i64(0), b.reshape(m, []), b.i64(1)])
    zero = b.const(np.float32(0))

    hint = ctx.layer.name or f"nms_rotated_{ctx.layer.id}"
    cb = b.child()
    t = cb.add_input(cb.names.fresh(f"{hint}/step"), I64, [])
    cond = cb.add_input(cb.names.fresh(f"{hint}/cond"), BOOL, [])
    taken = cb.add_input(cb.names.fresh(f"{hint}/taken"), BOOL, [None, None, None])  # by visiting position
    n_taken = cb.add_input(cb.names.fresh(f"{hint}/count"), I64, [None, None, None])
    t1 = cb.reshape(t, [1])
    cur = [cb.unsqueeze(cb.op("Gather", [f, t1], {"axis": 2}), [3]) for f in ordered]  # [B, C, 1, 1]
    others = [cb.unsqueeze(f, [2]) for f in ordered]  # [B, C, 1, M]
    iou = cb.squeeze(rotated_iou(cb, cur, others, clockwise), [2])  # [B, C, M]
    over = cb.op("And", [taken, cb.op("Greater", [iou, iou_thr])])
    hits = cb.reduce("ReduceSum", cb.cast(over, I64), [2], keepdims=True)
    area0 = cb.squeeze(cb.op("Mul", [cur[2], cur[3]]), [3])  # [B, C, 1]
    positive = cb.op("Greater", [area0, zero])
    dropped = cb.op("Or", [cb.op("And", [positive, cb.op("Greater", [hits, cb.i64(0)])]),
                           cb.op("And", [cb.op("Not", [positive]), cb.op("Greater", [zero, iou_thr])])])
    dropped = cb.op("And", [dropped, cb.op("Greater", [n_taken, cb.i64(0)])])  # the first is always taken
    take = cb.op("And", [cb.op("And", [cb.op("Less", [t, count]), cb.op("Less", [n_taken, max_out])]),
                         cb.op("Not", [dropped])])
    taken_out = cb.op("Or", [taken, cb.op("And", [cb.op("Equal", [positions, t]), take])])
    n_out = cb.op("Add", [n_taken, cb.cast(take, I64)])
    outs = [cb.identity(cond), taken_out, n_out]
    for v, ty, rank in zip(outs, (BOOL, BOOL, I64), (0, 3, 3)):
        v.type, v.shape = oir.TensorType(ty), oir.Shape([None] * rank)
    body = cb.build(outs, b.names.fresh(f"{hint}/nms_body"))
    none = b.op("ConstantOfShape", [full], {"value": np.zeros(1, np.bool_)})
    n0 = b.op("ConstantOfShape", [b.shape_of(count)], {"value": np.zeros(1, np.int64)})
    trips = b.reduce("ReduceMax", b.op("Concat", [b.reshape(count, [-1]), b.i64([0])], {"axis": 0}), [0],
                     keepdims=False)  # the most candidates a row has
    taken_all, _ = b.op_multi("Loop", [trips, b.const(np.array(True)), none, n0], {"body": body}, outputs=2)
    batch, cls, box, score = flatten_selected(b, taken_all, order, vals)
    if ctx.attr_bool("sort_result_descending", True):
        k = b.shape_of(score)
        _, perm = b.op_multi("TopK", [score, k], {"axis": 0, "largest": 1, "sorted": 1}, outputs=2)
        batch, cls, box, score = (b.op("Gather", [v, perm], {"axis": 0}) for v in (batch, cls, box, score))
    col = lambda v: b.unsqueeze(v, [1])
    sel = b.concat([col(batch), col(cls), col(box)], 1)
    triples = b.concat([col(b.cast(batch, F32)), col(b.cast(cls, F32)), col(score)], 1)
    if score_et.name != "f32":
        triples = b.cast(triples, onnx_dtype(score_et))
    valid = b.shape_of(sel, 0, 1)
    if idx_type != I64:
        sel, valid = b.cast(sel, idx_type), b.cast(valid, idx_type)
    return [mark_runtime_dims(sel), mark_runtime_dims(triples), valid]
