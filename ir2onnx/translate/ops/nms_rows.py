"""What MulticlassNms-8/9 and MatrixNms-8 share: their inputs' two forms and the ordering, keep_top_k cut and
outputs of the selected rows, as OpenVINO's CPU plugin computes them.

Rows (batch, class, box, score) are first sorted by batch, score (descending), class, box; keep_top_k >= 0 keeps
the first rows of each batch; then sort_result_type / sort_result_across_batch order them:
* across batches, "score": score (descending), batch, class, box;
* across batches, "classid": class, batch, score (descending), box;
* within batches, "classid": batch, class, score (descending), box (MulticlassNms only);
* otherwise ("score" within batches, "none", and "classid" within batches for MatrixNms): the first order.
Equal scores are compared exactly; MulticlassNms's first sort in the plugin also treats scores less than 1e-6 apart
as equal, which is not an ordering (its result depends on the sort's order of comparisons) and is not reproduced.
Outputs: selected_outputs [K, 6] (class, score, the box's four coordinates as given), selected_indices [K, 1] (shared
boxes: batch * num_boxes + box; per-class boxes: (first box of the batch + box) * num_classes + class), and
selected_num [batches] (rows of each batch).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import GraphBuilder, onnx_dtype
from ir2onnx.translate.context import LayerContext, mark_runtime_dims

F32, I64 = oir.DataType.FLOAT, oir.DataType.INT64


@dataclass
class NmsInputs:
    """The per-(batch, class) view of both input forms: scores [B, C, M] (f32), per-box coordinates [B, 1 or C, M]
    (in the input's order), `valid` [B, 1, M] (or None: every box exists), and what the outputs need."""

    scores: oir.Value
    coords: list[oir.Value]
    valid: oir.Value | None
    shared: bool
    boxes: oir.Value  # the f32 boxes input as given
    offsets: oir.Value | None  # per-class form: the first row of each batch [B]


def read_inputs(ctx: LayerContext) -> NmsInputs:
    b = ctx.b
    boxes, scores = ctx.float32_input(0), ctx.float32_input(1)
    if ctx.input_rank(1) == 3:
        coords = [b.unsqueeze(b.op("Gather", [boxes, b.i64(k)], {"axis": 2}), [1]) for k in range(4)]
        return NmsInputs(scores, coords, None, True, boxes, None)
    if len(ctx.inputs) < 3:
        raise ctx.error("2-D scores (boxes per class) need the roisnum input")
    # boxes [C, S, 4], scores [C, S], roisnum [B]: batch b owns rows offsets[b] .. offsets[b] + roisnum[b]
    rois = b.reshape(b.cast(ctx.inputs[2], I64), [-1])
    offsets = b.op("Sub", [b.op("CumSum", [rois, b.i64(0)]), rois])
    s = b.shape_of(boxes, 1, 2)
    pos = b.op("Range", [b.i64(0), b.reshape(s, []), b.i64(1)])  # [S]
    rows = b.op("Add", [b.unsqueeze(offsets, [1]), b.unsqueeze(pos, [0])])  # [B, S]
    valid = b.unsqueeze(b.op("Less", [b.unsqueeze(pos, [0]), b.unsqueeze(rois, [1])]), [1])  # [B, 1, S]
    rows = b.op("Max", [b.op("Min", [rows, b.op("Sub", [s, b.i64([1])])]), b.i64([0])])
    perm = {"perm": [1, 0, 2]}
    per_batch = b.op("Transpose", [b.op("Gather", [scores, rows], {"axis": 1})], perm)  # [B, C, S]
    box_rows = b.op("Gather", [boxes, rows], {"axis": 1})  # [C, B, S, 4]
    coords = [b.op("Transpose", [b.op("Gather", [box_rows, b.i64(k)], {"axis": 3})], perm) for k in range(4)]
    return NmsInputs(per_batch, coords, valid, False, boxes, offsets)


def stable_sort(b: GraphBuilder, cols: Sequence[oir.Value], key: oir.Value, descending: bool) -> list[oir.Value]:
    """Reorder the 1-D columns by `key`, keeping the current order among equal keys (ONNX TopK is stable)."""
    k = b.shape_of(key)
    _, order = b.op_multi("TopK", [key, k], {"axis": 0, "largest": int(descending), "sorted": 1}, outputs=2)
    return [b.op("Gather", [c, order], {"axis": 0}) for c in cols]


def _per_batch_counts(b: GraphBuilder, batch: oir.Value, n_batches: oir.Value) -> oir.Value:
    zeros = b.op("ConstantOfShape", [n_batches], {"value": np.zeros(1, np.int64)})
    ones = b.op("Add", [b.op("Mul", [batch, b.i64(0)]), b.i64(1)])
    return b.op("ScatterElements", [zeros, batch, ones], {"axis": 0, "reduction": "add"})


def emit_outputs(ctx: LayerContext, inp: NmsInputs, batch: oir.Value, cls: oir.Value, box: oir.Value,
                 score: oir.Value, classid_within_batch: bool = True) -> list[oir.Value]:
    """Selected rows (1-D int64 batch/class/box, f32 score, in batch, class order) -> the three outputs.
    `classid_within_batch`: "classid" without sort_result_across_batch sorts by class in each batch (MulticlassNms;
    MatrixNms keeps the first order)."""
    b = ctx.b
    n_batches = b.shape_of(inp.scores, 0, 1)
    cols = [batch, cls, box, score]
    # batch, score descending, class, box
    cols = stable_sort(b, cols, cols[2], False)
    cols = stable_sort(b, cols, cols[1], False)
    cols = stable_sort(b, cols, cols[3], True)
    cols = stable_sort(b, cols, cols[0], False)
    keep_top_k = ctx.attr_int("keep_top_k", -1)
    if keep_top_k >= 0:
        counts = _per_batch_counts(b, cols[0], n_batches)
        starts = b.op("Sub", [b.op("CumSum", [counts, b.i64(0)]), counts])
        rank = b.op("Sub", [b.op("Range", [b.i64(0), b.reshape(b.shape_of(cols[0]), []), b.i64(1)]),
                            b.op("Gather", [starts, cols[0]], {"axis": 0})])
        kept = b.op("Less", [rank, b.i64(keep_top_k)])
        cols = [b.op("Compress", [c, kept], {"axis": 0}) for c in cols]
    sort_type = ctx.attr_str("sort_result_type", "none").lower()
    across = ctx.attr_bool("sort_result_across_batch", False)
    if sort_type == "score" and across:
        for j, desc in ((2, False), (1, False), (0, False), (3, True)):
            cols = stable_sort(b, cols, cols[j], desc)
    elif sort_type == "classid" and (across or classid_within_batch):
        order = ((2, False), (3, True), (0, False), (1, False)) if across else \
            ((2, False), (3, True), (1, False), (0, False))
        for j, desc in order:
            cols = stable_sort(b, cols, cols[j], desc)
    elif sort_type not in ("score", "none", "classid"):
        raise ctx.error(f"unknown sort_result_type '{sort_type}'")
    batch, cls, box, score = cols
    if inp.shared:
        index = b.op("Add", [b.op("Mul", [batch, b.shape_of(inp.boxes, 1, 2)]), box])
        coords = b.op("Gather", [b.reshape(inp.boxes, [-1, 4]), index], {"axis": 0})
    else:
        assert inp.offsets is not None
        row = b.op("Add", [b.op("Gather", [inp.offsets, batch], {"axis": 0}), box])
        index = b.op("Add", [b.op("Mul", [row, b.shape_of(inp.boxes, 0, 1)]), cls])
        coords = b.op("GatherND", [inp.boxes, b.op("Concat", [b.unsqueeze(cls, [1]), b.unsqueeze(row, [1])],
                                                           {"axis": 1})])
    outputs = b.concat([b.unsqueeze(b.cast(cls, F32), [1]), b.unsqueeze(score, [1]), coords], 1)
    float_et = ctx.output_type(0)
    if float_et.name != "f32":
        outputs = b.cast(outputs, onnx_dtype(float_et))
    idx_et = onnx_dtype(ctx.output_type(1))
    index = b.unsqueeze(index, [1])
    num = _per_batch_counts(b, batch, n_batches)
    if idx_et != I64:
        index, num = b.cast(index, idx_et), b.cast(num, idx_et)
    return [mark_runtime_dims(outputs), mark_runtime_dims(index), num]


def flatten_selected(b: GraphBuilder, selected: oir.Value, box: oir.Value,
                     score: oir.Value) -> tuple[oir.Value, oir.Value, oir.Value, oir.Value]:
    """selected [B, C, M] (bool), box and score [B, C, M] -> 1-D batch, class, box, score of the selected entries
    in batch, class, position order."""
    shape = b.shape_of(selected)
    grid = b.op("ConstantOfShape", [shape], {"value": np.zeros(1, np.int64)})
    bi = b.op("Add", [grid, b.reshape(b.op("Range", [b.i64(0), b.reshape(b.shape_of(selected, 0, 1), []),
                                                     b.i64(1)]), [-1, 1, 1])])
    ci = b.op("Add", [grid, b.reshape(b.op("Range", [b.i64(0), b.reshape(b.shape_of(selected, 1, 2), []),
                                                     b.i64(1)]), [1, -1, 1])])
    mask = b.reshape(selected, [-1])
    return tuple(b.op("Compress", [b.reshape(v, [-1]), mask], {"axis": 0})  # type: ignore[return-value]
                 for v in (bi, ci, box, score))
