"""DetectionOutput-1/8 (SSD-style detection heads), composed as OpenVINO's CPU plugin computes it.

Inputs: box offsets [N, P * L * 4] (L = 1 with share_location, else the class count C), class confidences
[N, P * C], priors [1 or N, 1 or 2, P * S] (S = 4, or 5 when not normalized: a batch id, -1 ending the priors,
then the corners in pixels), and for the two-stage (ARM) form the objectness [N, P * 2] and its box offsets.

1. Decoding (CORNER: prior + variance * offset; CENTER_SIZE: centre shift and exp() scaling, the plugin's order of
   operations). Unnormalized priors are divided by input_width/height; with ARM offsets the priors are decoded
   twice, the division and clip_before_nms applied at both steps, as the plugin does. A prior whose ARM objectness
   is below objectness_score scores 1 for the background class and 0 for the others.
2. Candidates: caffe style (decrease_label_id=false) every class but the background whose confidence is above
   confidence_threshold; MXNet style (decrease_label_id=true) per prior only its best class (first index among
   classes >= 1 with confidence >= the threshold and > -1).
3. top_k: per class (caffe) or per image over (class, prior) (MXNet), by descending score, ties by lower index.
4. Greedy NMS per class in that order: a candidate is dropped when its overlap with a kept box is above
   nms_threshold. The overlap is the plugin's formula (0 for disjoint boxes, sizes from the decoded corners, no
   reordering of flipped corners), so ONNX NonMaxSuppression, which normalizes corners and never suppresses with
   a zero overlap, is not used: an ONNX Loop visits the sorted candidates one by one.
5. keep_top_k: when an image has more detections, the best keep_top_k by descending score, ties by lower prior
   index (then lower class: the plugin's order is unspecified there).
6. Output [1, 1, R, 7] rows (image, label, score, xmin, ymin, xmax, ymax), by image, class, descending score;
   clip_after_nms clamps the written corners; after the last row one row starts with -1, the rest are zeros.

CORNER_SIZE is refused: OpenVINO's DetectionOutput rejects it (only CORNER and CENTER_SIZE are accepted).
"""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import GraphBuilder, onnx_dtype
from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.registry import converter

_CODE_TYPES = {"caffe.priorboxparameter.corner": "corner", "caffe.priorboxparameter.center_size": "center"}
_NEG_INF = np.float32(-np.inf)


def _f(b: GraphBuilder, v: float) -> oir.Value:
    return b.const(np.array(v, np.float32))


def _split4(b: GraphBuilder, x: oir.Value) -> list[oir.Value]:
    """Last axis (4 corners) -> four tensors keeping a size-1 last axis."""
    return [b.slice(x, [k], [k + 1], [-1]) for k in range(4)]


class _Decoder:
    def __init__(self, b: GraphBuilder, code: str, variance_in_target: bool, normalized: bool, width: float,
                 height: float, clip: bool) -> None:
        self.b, self.code, self.vit, self.normalized = b, code, variance_in_target, normalized
        self.width, self.height, self.clip = width, height, clip

    def __call__(self, prior: oir.Value, loc: oir.Value, var: oir.Value | None) -> oir.Value:
        """prior [..., 4] corners, loc [..., 4] offsets, var [..., 4] -> decoded corners [..., 4]."""
        b = self.b
        px0, py0, px1, py1 = _split4(b, prior)
        if not self.normalized:
            px0, px1 = (b.op("Div", [v, _f(b, self.width)]) for v in (px0, px1))
            py0, py1 = (b.op("Div", [v, _f(b, self.height)]) for v in (py0, py1))
        l0, l1, l2, l3 = _split4(b, loc)
        if not self.vit:
            assert var is not None
            v0, v1, v2, v3 = _split4(b, var)
        mul, add, sub = (lambda x, y: b.op("Mul", [x, y])), (lambda x, y: b.op("Add", [x, y])), \
            (lambda x, y: b.op("Sub", [x, y]))
        if self.code == "corner":
            if self.vit:
                out = [add(px0, l0), add(py0, l1), add(px1, l2), add(py1, l3)]
            else:
                out = [add(px0, mul(v0, l0)), add(py0, mul(v1, l1)), add(px1, mul(v2, l2)), add(py1, mul(v3, l3))]
        else:
            pw, ph = sub(px1, px0), sub(py1, py0)
            half = _f(b, 2.0)
            pcx, pcy = b.op("Div", [add(px0, px1), half]), b.op("Div", [add(py0, py1), half])
            if self.vit:
                cx, cy = add(mul(l0, pw), pcx), add(mul(l1, ph), pcy)
                w, h = mul(b.op("Exp", [l2]), pw), mul(b.op("Exp", [l3]), ph)
            else:
                cx, cy = add(mul(mul(v0, l0), pw), pcx), add(mul(mul(v1, l1), ph), pcy)
                w, h = mul(b.op("Exp", [mul(v2, l2)]), pw), mul(b.op("Exp", [mul(v3, l3)]), ph)
            hw, hh = b.op("Div", [w, half]), b.op("Div", [h, half])
            out = [sub(cx, hw), sub(cy, hh), add(cx, hw), add(cy, hh)]
        box = b.concat(out, -1)
        if self.clip:
            box = _clip01(b, box)
        return box


def _clip01(b: GraphBuilder, x: oir.Value) -> oir.Value:
    return b.op("Max", [_f(b, 0.0), b.op("Min", [_f(b, 1.0), x])])


def _mask_of(b: GraphBuilder, shape_like: oir.Value, idx: oir.Value, upd: oir.Value, axis: int) -> oir.Value:
    """Boolean [shape of shape_like]: `upd` (bool) written at `idx` along `axis`, False elsewhere."""
    zeros = b.op("ConstantOfShape", [b.shape_of(shape_like)], {"value": np.zeros(1, np.uint8)})
    marks = b.op("ScatterElements", [zeros, idx, b.cast(upd, oir.DataType.UINT8)], {"axis": axis})
    return b.cast(marks, oir.DataType.BOOL)


def _greedy_nms(ctx: LayerContext, boxes: oir.Value, sizes: oir.Value, valid: oir.Value, k: oir.Value,
                threshold: float) -> oir.Value:
    """boxes [N, C, K, 4], sizes [N, C, K] and valid [N, C, K] in visiting order -> kept [N, C, K] (bool)."""
    b = ctx.b
    name = ctx.layer.name or f"detection_output_{ctx.layer.id}"
    cb, it, cond = b.loop_body(name)
    keep = cb.add_input(cb.names.fresh(f"{name}/keep"), oir.DataType.BOOL, [None, None, None])
    one = cb.reshape(it, [1])
    box_i = cb.op("Gather", [boxes, one], {"axis": 2})  # [N, C, 1, 4]
    size_i = cb.op("Gather", [sizes, one], {"axis": 2})  # [N, C, 1]
    ax0, ay0, ax1, ay1 = (cb.squeeze(v, [3]) for v in _split4(cb, box_i))
    bx0, by0, bx1, by1 = (cb.squeeze(v, [3]) for v in _split4(cb, boxes))
    disjoint = cb.op("Or", [cb.op("Or", [cb.op("Greater", [bx0, ax1]), cb.op("Less", [bx1, ax0])]),
                            cb.op("Or", [cb.op("Greater", [by0, ay1]), cb.op("Less", [by1, ay0])])])
    iw = cb.op("Sub", [cb.op("Min", [ax1, bx1]), cb.op("Max", [ax0, bx0])])
    ih = cb.op("Sub", [cb.op("Min", [ay1, by1]), cb.op("Max", [ay0, by0])])
    zero = _f(cb, 0.0)
    empty = cb.op("Or", [disjoint, cb.op("Or", [cb.op("LessOrEqual", [iw, zero]), cb.op("LessOrEqual", [ih, zero])])])
    inter = cb.op("Mul", [iw, ih])
    iou = cb.op("Div", [inter, cb.op("Sub", [cb.op("Add", [size_i, sizes]), inter])])
    overlap = cb.op("Where", [empty, zero, iou])
    hit = cb.op("And", [keep, cb.op("Greater", [overlap, _f(cb, threshold)])])
    suppressed = cb.op("Greater", [cb.reduce("ReduceSum", cb.cast(hit, oir.DataType.INT64), [2], keepdims=True),
                                   cb.i64(0)])
    valid_i = cb.op("Gather", [valid, one], {"axis": 2})
    new = cb.op("And", [valid_i, cb.op("Not", [suppressed])])  # [N, C, 1]
    slots = cb.op("Range", [cb.i64(0), cb.reshape(k, []), cb.i64(1)])
    at_i = cb.op("Equal", [slots, it])
    out_keep = cb.op("Or", [keep, cb.op("And", [at_i, new])])
    out_keep.type, out_keep.shape = oir.TensorType(oir.DataType.BOOL), oir.Shape([None] * 3)
    body = cb.build_loop_body(cond, [out_keep], b.names.fresh(f"{name}/nms_body"))
    start = b.op("ConstantOfShape", [b.shape_of(valid)], {"value": np.zeros(1, np.bool_)})
    return b.op("Loop", [b.reshape(k, []), b.const(np.array(True)), start], {"body": body})


@converter("DetectionOutput", "opset1", "opset8",
           onnx="Loop (greedy NMS), TopK, GatherElements, ScatterElements, Exp, Where, Pad")
def detection_output(ctx: LayerContext) -> oir.Value:
    b = ctx.b
    f32, i64 = oir.DataType.FLOAT, oir.DataType.INT64
    code_raw = ctx.attr_str("code_type", "caffe.PriorBoxParameter.CORNER")
    code = _CODE_TYPES.get(code_raw.lower())
    if code is None:
        raise ctx.error(f"code_type {code_raw} is not CORNER or CENTER_SIZE, which OpenVINO rejects as well")
    share = ctx.attr_bool("share_location", True)
    background = ctx.attr_int("background_label_id", 0)
    top_k = ctx.attr_int("top_k", -1)
    keep_top_k = ctx.attr_ints("keep_top_k")[0]
    nms_threshold = float(np.float32(ctx.attr_float("nms_threshold")))
    conf_threshold = float(np.float32(ctx.attr_float("confidence_threshold", 0.0)))
    objectness = float(np.float32(ctx.attr_float("objectness_score", 0.0)))
    normalized = ctx.attr_bool("normalized", False)
    vit = ctx.attr_bool("variance_encoded_in_target", False)
    mxnet = ctx.attr_bool("decrease_label_id", False)
    if top_k < -1:
        raise ctx.error(f"top_k={top_k}: only -1 (no limit) or a count is defined")
    if mxnet and background != 0:
        raise ctx.error("decrease_label_id needs background_label_id 0 (OpenVINO refuses the combination)")
    if len(ctx.inputs) not in (3, 5):
        raise ctx.error(f"{len(ctx.inputs)} inputs: DetectionOutput takes 3, or 5 with the ARM inputs")
    decode = _Decoder(b, code, vit, normalized, float(np.float32(ctx.attr_float("input_width", 1.0))),
                      float(np.float32(ctx.attr_float("input_height", 1.0))), ctx.attr_bool("clip_before_nms", False))
    ins = [x if ctx.input_type(i).name == "f32" else b.cast(x, f32) for i, x in enumerate(ctx.inputs)]
    loc, conf, priors = ins[0], ins[1], ins[2]
    psize = 4 if normalized else 5

    # sizes: P priors, C classes, L location sets
    n_img = b.shape_of(conf, 0, 1)
    p_num = b.op("Div", [b.shape_of(priors, 2, 3), b.i64([psize])])
    c_num = b.op("Div", [b.shape_of(conf, 1, 2), p_num])
    l_num = b.i64([1]) if share else c_num

    prior_rows = b.reshape(b.slice(priors, [0], [1], [1]), b.concat([b.i64([-1]), p_num, b.i64([psize])], 0))
    corners = b.unsqueeze(b.slice(prior_rows, [psize - 4], [psize], [2]), [1])  # [Np, 1, P, 4]
    var = None
    if not vit:
        var = b.unsqueeze(b.reshape(b.slice(b.slice(priors, [1], [2], [1]), [0], b.op("Mul", [p_num, b.i64([4])]),
                                            [2]), b.concat([b.i64([-1]), p_num, b.i64([4])], 0)), [1])
    p_range = b.op("Range", [b.i64(0), b.reshape(p_num, []), b.i64(1)])
    if normalized:
        prior_ok = None
    else:  # the priors end at the first batch id of -1
        ids = b.slice(prior_rows, [0], [1], [2])  # [Np, P, 1]
        ends = b.op("Where", [b.op("Equal", [b.squeeze(ids, [2]), _f(b, -1.0)]), p_range, b.reshape(p_num, [])])
        actual = b.reduce("ReduceMin", ends, [1], keepdims=True)  # [Np, 1]
        prior_ok = b.unsqueeze(b.op("Less", [b.unsqueeze(p_range, [0]), actual]), [1])  # [Np, 1, P]

    def offsets(x: oir.Value) -> oir.Value:  # [N, P * L * 4] -> [N, L, P, 4]
        shaped = b.reshape(x, b.concat([n_img, p_num, l_num, b.i64([4])], 0))
        return b.op("Transpose", [shaped], {"perm": [0, 2, 1, 3]})

    if len(ins) == 5:
        boxes = decode(decode(corners, offsets(ins[4]), var), offsets(loc), var)
    else:
        boxes = decode(corners, offsets(loc), var)
    bx = _split4(b, boxes)
    sizes = b.squeeze(b.op("Mul", [b.op("Sub", [bx[2], bx[0]]), b.op("Sub", [bx[3], bx[1]])]), [3])  # [N, L, P]

    scores = b.op("Transpose", [b.reshape(conf, b.concat([n_img, p_num, c_num], 0))], {"perm": [0, 2, 1]})
    c_range = b.op("Range", [b.i64(0), b.reshape(c_num, []), b.i64(1)])
    c_col = b.unsqueeze(c_range, [0, 2])  # [1, C, 1]
    if len(ins) == 5:
        obj = b.slice(b.reshape(ins[3], b.concat([n_img, p_num, b.i64([2])], 0)), [1], [2], [2])  # [N, P, 1]
        low = b.op("Transpose", [b.op("Less", [obj, _f(b, objectness)])], {"perm": [0, 2, 1]})  # [N, 1, P]
        forced = b.cast(b.op("Equal", [c_col, b.i64(background)]), f32)
        scores = b.op("Where", [low, forced, scores])

    neg_inf = b.const(_NEG_INF)
    if not mxnet:
        valid = b.op("And", [b.op("Greater", [scores, _f(b, conf_threshold)]),
                             b.op("Not", [b.op("Equal", [c_col, b.i64(background)])])])
    else:
        allowed = b.op("And", [b.op("And", [b.op("GreaterOrEqual", [scores, _f(b, conf_threshold)]),
                                            b.op("Greater", [scores, _f(b, -1.0)])]),
                               b.op("GreaterOrEqual", [c_col, b.i64(1)])])
        masked = b.op("Where", [allowed, scores, neg_inf])
        best = b.op("ArgMax", [masked], {"axis": 1, "keepdims": 1, "select_last_index": 0})
        has = b.reduce("ReduceMax", b.cast(allowed, oir.DataType.INT32), [1], keepdims=True)
        valid = b.op("And", [b.op("Equal", [c_col, best]), b.cast(has, oir.DataType.BOOL)])
    if prior_ok is not None:
        valid = b.op("And", [valid, prior_ok])
    if mxnet and top_k >= 0:  # top_k over the whole image: score, then class * P + prior
        flat = b.reshape(b.op("Where", [valid, scores, neg_inf]), [0, -1])
        kg = b.op("Min", [b.i64([top_k]), b.shape_of(flat, 1, 2)])
        _, chosen = b.op_multi("TopK", [flat, kg], {"axis": 1, "largest": 1, "sorted": 1}, outputs=2)
        picked = _mask_of(b, flat, chosen, b.op("Expand", [b.const(np.array(True)), b.shape_of(chosen)]), 1)
        valid = b.op("And", [valid, b.reshape(picked, b.shape_of(valid))])

    # per class, the candidates by descending score (ties: lower prior), at most top_k of them
    k = p_num if top_k < 0 else b.op("Min", [b.i64([top_k]), p_num])
    _, order = b.op_multi("TopK", [b.op("Where", [valid, scores, neg_inf]), k],
                          {"axis": 2, "largest": 1, "sorted": 1}, outputs=2)  # [N, C, K]
    slot_valid = b.op("GatherElements", [valid, order], {"axis": 2})
    per_class = b.concat([n_img, c_num, p_num, b.i64([4])], 0)
    all_boxes = b.op("Expand", [boxes, per_class])  # [N, C, P, 4]
    all_sizes = b.op("Expand", [sizes, b.slice(per_class, [0], [3], [0])])
    order4 = b.op("Expand", [b.unsqueeze(order, [3]), b.concat([b.shape_of(order), b.i64([4])], 0)])
    s_boxes = b.op("GatherElements", [all_boxes, order4], {"axis": 2})
    s_sizes = b.op("GatherElements", [all_sizes, order], {"axis": 2})
    s_scores = b.op("GatherElements", [scores, order], {"axis": 2})
    kept = _greedy_nms(ctx, s_boxes, s_sizes, slot_valid, k, nms_threshold)

    if keep_top_k == 0:
        kept = b.op("And", [kept, b.const(np.array(False))])
    elif keep_top_k > 0:  # best keep_top_k of the image: score, then prior, then class
        kept_cp = _mask_of(b, scores, order, kept, 2)  # [N, C, P]
        by_prior = b.op("Transpose", [b.op("Where", [kept_cp, scores, neg_inf])], {"perm": [0, 2, 1]})
        flat = b.reshape(by_prior, [0, -1])
        kk = b.op("Min", [b.i64([keep_top_k]), b.shape_of(flat, 1, 2)])
        _, chosen = b.op_multi("TopK", [flat, kk], {"axis": 1, "largest": 1, "sorted": 1}, outputs=2)
        picked = _mask_of(b, flat, chosen, b.op("Expand", [b.const(np.array(True)), b.shape_of(chosen)]), 1)
        picked = b.op("Transpose", [b.reshape(picked, b.shape_of(by_prior))], {"perm": [0, 2, 1]})
        total = b.reduce("ReduceSum", b.cast(kept, i64), [1, 2], keepdims=True)  # [N, 1, 1]
        over = b.op("Greater", [total, b.i64(keep_top_k)])
        slot_picked = b.op("GatherElements", [picked, order], {"axis": 2})
        kept = b.op("And", [kept, b.op("Or", [b.op("Not", [over]), slot_picked])])

    # rows in (image, class, slot) order: a stable compaction of the kept slots
    if ctx.attr_bool("clip_after_nms", False):
        s_boxes = _clip01(b, s_boxes)
    grid = b.shape_of(s_scores)
    img = b.op("Expand", [b.cast(b.unsqueeze(b.op("Range", [b.i64(0), b.reshape(n_img, []), b.i64(1)]), [1, 2]),
                                 f32), grid])
    label = b.op("Expand", [b.cast(b.op("Sub", [c_col, b.i64(1)]) if mxnet else c_col, f32), grid])
    table = b.concat([b.unsqueeze(img, [3]), b.unsqueeze(label, [3]), b.unsqueeze(s_scores, [3]), s_boxes], 3)
    table = b.reshape(table, [-1, 7])
    flat_kept = b.reshape(kept, [-1])
    total_slots = b.shape_of(flat_kept)
    pos = b.op("Range", [b.i64(0), b.reshape(total_slots, []), b.i64(1)])
    key = b.op("Where", [flat_kept, pos, b.op("Add", [pos, b.reshape(total_slots, [])])])
    rows = _result_rows(ctx, n_img, c_num, p_num, top_k, keep_top_k)
    take = b.op("Min", [rows, total_slots])
    _, first = b.op_multi("TopK", [key, take], {"axis": 0, "largest": 0, "sorted": 1}, outputs=2)
    picked_rows = b.op("Gather", [table, first], {"axis": 0})
    picked_rows = b.op("Pad", [picked_rows, b.concat([b.i64([0, 0]), b.op("Sub", [rows, take]), b.i64([0])], 0)])
    count = b.reduce("ReduceSum", b.cast(flat_kept, i64), [0], keepdims=False)
    r = b.unsqueeze(b.op("Range", [b.i64(0), b.reshape(rows, []), b.i64(1)]), [1])
    marker = b.const(np.array([[-1, 0, 0, 0, 0, 0, 0]], np.float32))
    out = b.op("Where", [b.op("Less", [r, count]), picked_rows,
                         b.op("Where", [b.op("Equal", [r, count]), marker, _f(b, 0.0)])])
    out = b.reshape(out, b.concat([b.i64([1, 1]), rows, b.i64([7])], 0))
    et = ctx.output_type(0)
    return out if et.name == "f32" else b.cast(out, onnx_dtype(et))


def _result_rows(ctx: LayerContext, n_img: oir.Value, c_num: oir.Value, p_num: oir.Value, top_k: int,
                 keep_top_k: int) -> oir.Value:
    """R, the output's row count [1]: the IR's when static, else OpenVINO's rule."""
    b = ctx.b
    dims = ctx.layer.outputs[0].dims
    if len(dims) == 4 and dims[2] is not None:
        return b.i64([int(dims[2])])
    if keep_top_k > 0:
        return b.op("Mul", [n_img, b.i64([keep_top_k])])
    if top_k > 0:
        return b.op("Mul", [b.op("Mul", [n_img, c_num]), b.i64([top_k])])
    return b.op("Mul", [b.op("Mul", [n_img, c_num]), p_num])
