"""Greedy CTC decoding: CTCGreedyDecoder-1 and CTCGreedyDecoderSeqLen-6.

What OpenVINO's CPU plugin computes (established by experiment): at every time step the class is the first index of
the largest score; steps past the sequence length are ignored; a step is emitted when its class is not the blank
and, with merging, differs from the previous step's class (a blank between two equal classes separates them). The
emitted classes are packed to the front of the time axis in order and the rest is -1.

* CTCGreedyDecoder-1: data [T, N, C], the blank is C - 1, a sequence ends at its first zero in the mask [T, N];
  output [N, T, 1, 1] in the data's type.
* CTCGreedyDecoderSeqLen-6: data [N, T, C], sequence_length [N], blank_index (default C - 1, compared as given:
  -1 or C + 5 blank nothing); outputs the classes [N, T] and their counts [N]. A length above T is an error in
  OpenVINO; the composition takes all T steps.

The packing is a stable order: the kept steps keep their time index as sort key, the others are moved behind by T,
and TopK (ascending, keys distinct) returns the permutation that GatherElements applies.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import GraphBuilder, onnx_dtype
from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.registry import converter


def _greedy(b: GraphBuilder, data: oir.Value, lengths: oir.Value, blank: oir.Value, merge: bool) -> tuple[oir.Value,
                                                                                                        oir.Value]:
    """data [N, T, C] (float), lengths [N] int64, blank int64 scalar -> (classes [N, T] int64 padded with -1,
    counts [N] int64)."""
    i64 = oir.DataType.INT64
    cls = b.op("ArgMax", [data], {"axis": 2, "keepdims": 0, "select_last_index": 0})  # [N, T]
    steps = b.shape_of(data, 1, 2)
    t = b.op("Range", [b.i64(0), b.reshape(steps, []), b.i64(1)])  # [T]
    t_row = b.unsqueeze(t, [0])
    keep = b.op("And", [b.op("Less", [t_row, b.unsqueeze(lengths, [1])]),
                        b.op("Not", [b.op("Equal", [cls, blank])])])
    if merge:
        # previous step's class; -1 before the first step (no class equals it)
        prev = b.slice(b.op("Pad", [cls, b.i64([0, 1, 0, 0]), b.const(np.array(-1, np.int64))]), [0], steps, [1])
        keep = b.op("And", [keep, b.op("Not", [b.op("Equal", [cls, prev])])])
    count = b.reduce("ReduceSum", b.cast(keep, i64), [1], keepdims=False)
    key = b.op("Where", [keep, t_row, b.op("Add", [t_row, steps])])
    _, order = b.op_multi("TopK", [key, steps], {"axis": 1, "largest": 0, "sorted": 1}, outputs=2)
    packed = b.op("GatherElements", [cls, order], {"axis": 1})
    packed = b.op("Where", [b.op("Less", [t_row, b.unsqueeze(count, [1])]), packed, b.i64(-1)])
    return packed, count


def _float_data(ctx: LayerContext) -> oir.Value:
    """Scores as float32 (f16/bf16/f64 scores keep their argmax)."""
    x = ctx.inputs[0]
    return x if ctx.input_type(0).name == "f32" else ctx.b.cast(x, oir.DataType.FLOAT)


@converter("CTCGreedyDecoder", "opset1")
def ctc_greedy_decoder(ctx: LayerContext) -> oir.Value:
    b = ctx.b
    data = b.op("Transpose", [_float_data(ctx)], {"perm": [1, 0, 2]})  # [N, T, C]
    mask = ctx.inputs[1]  # [T, N]: the length is the index of the first zero (T when none)
    if ctx.input_type(1).name != "f32":
        mask = b.cast(mask, oir.DataType.FLOAT)
    steps = b.shape_of(mask, 0, 1)
    t = b.unsqueeze(b.op("Range", [b.i64(0), b.reshape(steps, []), b.i64(1)]), [1])
    zero = b.op("Equal", [mask, b.const(np.array(0, np.float32))])
    first_zero = b.op("Where", [zero, t, b.reshape(steps, [])])
    lengths = b.reduce("ReduceMin", first_zero, [0], keepdims=False)
    blank = b.op("Sub", [b.reshape(b.shape_of(data, 2, 3), []), b.i64(1)])
    packed, _ = _greedy(b, data, lengths, blank, ctx.attr_bool("ctc_merge_repeated", True))
    out = b.unsqueeze(packed, [2, 3])
    return b.cast(out, onnx_dtype(ctx.output_type(0)))


@converter("CTCGreedyDecoderSeqLen", "opset6")
def ctc_greedy_decoder_seq_len(ctx: LayerContext) -> list[oir.Value]:
    b = ctx.b
    i64 = oir.DataType.INT64
    data = _float_data(ctx)
    lengths = b.reshape(b.cast(ctx.inputs[1], i64), [-1])
    if len(ctx.inputs) > 2 and ctx.inputs[2] is not None:
        c = ctx.const(2)
        blank = b.i64(int(c.reshape(-1)[0])) if c is not None else b.reshape(b.cast(ctx.inputs[2], i64), [])
    else:
        blank = b.op("Sub", [b.reshape(b.shape_of(data, 2, 3), []), b.i64(1)])
    packed, count = _greedy(b, data, lengths, blank, ctx.attr_bool("merge_repeated", True))
    cls_t, len_t = onnx_dtype(ctx.output_type(0)), onnx_dtype(ctx.output_type(1))
    return [packed if cls_t == i64 else b.cast(packed, cls_t), count if len_t == i64 else b.cast(count, len_t)]


@converter("GatherTree", "opset1", onnx="Scan (reverse), GatherElements, Where, Less, CumSum, Equal")
def gather_tree(ctx: LayerContext) -> oir.Value:
    """Beam-search backtracking, as OpenVINO's CPU plugin does it for each (batch, beam): steps at or past
    min(T, max_seq_len[batch]) get end_token; walking back from the last step before it, the beam's token is
    step_ids[t, batch, parent] and the parent becomes parent_ids[t, batch, parent]; then every step after the first
    end_token within the length becomes end_token too. A reverse ONNX Scan carries the parents [B, W].

    Lengths are truncated to integers as the plugin reads them. Where the plugin fails (a parent outside
    [0, W)) the parent is clamped into it; where it leaves the output unwritten (a length <= 0) every step is
    end_token, as the specification's padding rule gives."""
    b = ctx.b
    i64 = oir.DataType.INT64
    et = ctx.input_type(0)
    dt = onnx_dtype(et)
    steps, parents = ctx.inputs[0], b.cast(ctx.inputs[1], i64)
    lengths = b.unsqueeze(b.reshape(b.cast(ctx.inputs[2], i64), [-1]), [1])  # [B, 1]
    end = b.reshape(ctx.inputs[3] if ctx.input_type(3).name == et.name else b.cast(ctx.inputs[3], dt), [])
    time = b.op("Range", [b.i64(0), b.reshape(b.shape_of(steps, 0, 1), []), b.i64(1)])
    width = b.shape_of(steps, 2, 3)
    start = b.op("Expand", [b.unsqueeze(b.op("Range", [b.i64(0), b.reshape(width, []), b.i64(1)]), [0]),
                            b.shape_of(steps, 1, 3)])
    last = b.op("Sub", [width, b.i64([1])])

    cb = b.child()
    name = ctx.layer.name or f"gather_tree_{ctx.layer.id}"
    parent = cb.add_input(cb.names.fresh(f"{name}/parent"), i64, [None, None])
    step_t = cb.add_input(cb.names.fresh(f"{name}/step"), dt, [None, None])
    parent_t = cb.add_input(cb.names.fresh(f"{name}/parent_ids"), i64, [None, None])
    t = cb.add_input(cb.names.fresh(f"{name}/time"), i64, [])
    active = cb.op("Less", [t, lengths])  # [B, 1]
    token = cb.op("Where", [active, cb.op("GatherElements", [step_t, parent], {"axis": 1}), end])
    nxt = cb.op("Clip", [cb.op("GatherElements", [parent_t, parent], {"axis": 1}), cb.i64(0),
                         cb.reshape(last, [])])
    nxt = cb.op("Where", [active, nxt, parent])
    body = cb.build([nxt, token], b.names.fresh(f"{name}/body"))
    for v, typ in ((nxt, i64), (token, dt)):
        v.type, v.shape = oir.TensorType(typ), oir.Shape([None, None])
    _, tokens = b.op_multi("Scan", [start, steps, parents, time], {
        "body": body, "num_scan_inputs": 3, "scan_input_directions": [1, 1, 1], "scan_output_directions": [1]},
        outputs=2)
    # after the first end_token within the length, every step is end_token
    t3 = b.reshape(time, [-1, 1, 1])
    hit = b.op("And", [b.op("Equal", [tokens, end]), b.op("Less", [t3, b.unsqueeze(lengths, [0])])])
    before = b.op("CumSum", [b.cast(hit, i64), b.i64(0)], {"exclusive": 1})
    return b.op("Where", [b.op("Greater", [before, b.i64(0)]), end, tokens])
