"""CTCLoss-4: the negative log-likelihood of each label sequence under the logits, as OpenVINO's CPU plugin
computes it.

Inputs: logits [N, T, C], logit_length [N], labels [N, T], label_length [N], blank_index (optional scalar, default
C - 1). Attributes: preprocess_collapse_repeated, ctc_merge_repeated, unique.

The plugin (established from its source and by experiment):
* decodes each label sequence (its first label_length labels): with `unique`, the first occurrence of every label;
  else with `preprocess_collapse_repeated`, one label per run of equal labels; else all of them; and interleaves
  blanks: l' = [blank, l1, blank, l2, ..., blank] (length S = 2 * labels + 1);
* takes log probabilities without shifting by the maximum: lp[t, c] = logits[t, c] - log(sum_c exp(logits[t, c])),
  exp in f32, the sum and the subtraction in f64, the result stored as f32;
* runs the backward recursion of Graves et al. in f32 over the sequence's logit_length steps: beta[s, T-1] = 0 for
  s in {S-2, S-1}, -inf elsewhere; beta[s, t] = logsum of, in this order, beta[s, t+1] + lp[t+1, l'_s] (when
  merging repeats, or l'_s is the blank), beta[s+1, t+1] + lp[t+1, l'_{s+1}], and beta[s+2, t+1] + lp[t+1,
  l'_{s+2}] (when l'_s is not the blank and, when merging repeats, differs from l'_{s+2}), where logsum(a, b) is
  the other when one is -inf, else max + log1p(exp(min - max));
* loss = -logsum(beta[0, 0] + lp[0, l'_0], beta[1, 0] + lp[0, l'_1]).

The composition pads every sequence to S = 2 * T + 1 states (padding states stay -inf, so they add nothing) and
runs the recursion for all sequences at once in a reverse ONNX Scan over time; a sequence takes its start values
at its own last step and keeps its state after its first step. log1p(x) is computed as log(u) * x / (u - 1) with
u = 1 + x (x when u rounds to 1), accurate to a few ulp.

Lengths outside what the plugin accepts (a label longer than its logits, a logit length above T) make the plugin
fail; empty label sequences and zero logit lengths make it read and write outside its buffers (see the tests).
"""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import GraphBuilder, onnx_dtype
from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.registry import converter

_NEG_INF = np.array(-np.inf, np.float32)


def _log1p(b: GraphBuilder, x: oir.Value) -> oir.Value:
    one = b.const(np.array(1, np.float32))
    u = b.op("Add", [one, x])
    scaled = b.op("Div", [b.op("Mul", [b.op("Log", [u]), x]), b.op("Sub", [u, one])])
    return b.op("Where", [b.op("Equal", [u, one]), x, scaled])


def _logsum(b: GraphBuilder, x: oir.Value, y: oir.Value) -> oir.Value:
    """The plugin's sumLogs: the other operand when one is -inf, else max + log1p(exp(min - max))."""
    ninf = b.const(_NEG_INF)
    hi, lo = b.op("Max", [x, y]), b.op("Min", [x, y])
    s = b.op("Add", [hi, _log1p(b, b.op("Exp", [b.op("Sub", [lo, hi])]))])
    return b.op("Where", [b.op("Equal", [x, ninf]), y, b.op("Where", [b.op("Equal", [y, ninf]), x, s])])


def _shift(b: GraphBuilder, x: oir.Value, k: int, fill: oir.Value) -> oir.Value:
    """x[:, s + k] along axis 1, `fill` ([N, k]) past the end."""
    return b.concat([b.slice(x, [k], [np.iinfo(np.int64).max], [1]), fill], 1)


def _decode(ctx: LayerContext, labels: oir.Value, lengths: oir.Value, steps: oir.Value) -> tuple[oir.Value, oir.Value]:
    """The kept labels packed to the front [N, T] and their counts [N] (int64)."""
    b = ctx.b
    i64 = oir.DataType.INT64
    t = b.op("Range", [b.i64(0), b.reshape(steps, []), b.i64(1)])
    t_row = b.unsqueeze(t, [0])  # [1, T]
    keep = b.op("Less", [t_row, b.unsqueeze(lengths, [1])])  # [N, T]
    if ctx.attr_bool("unique", False):
        # drop a label equal to an earlier one
        same = b.op("Equal", [b.unsqueeze(labels, [2]), b.unsqueeze(labels, [1])])  # [N, i, j]
        earlier = b.unsqueeze(b.op("Less", [t_row, b.unsqueeze(t, [1])]), [0])  # [1, i, j]: j < i
        seen = b.reduce("ReduceMax", b.cast(b.op("And", [same, earlier]), i64), [2], keepdims=False)
        keep = b.op("And", [keep, b.op("Equal", [seen, b.i64(0)])])
    elif ctx.attr_bool("preprocess_collapse_repeated", False):
        prev = b.slice(b.op("Pad", [labels, b.i64([0, 1, 0, 0]), b.const(np.array(-1, np.int64))]), [0], steps, [1])
        first = b.op("Equal", [t_row, b.i64(0)])
        keep = b.op("And", [keep, b.op("Or", [first, b.op("Not", [b.op("Equal", [labels, prev])])])])
    count = b.reduce("ReduceSum", b.cast(keep, i64), [1], keepdims=False)
    key = b.op("Where", [keep, t_row, b.op("Add", [t_row, steps])])
    _, order = b.op_multi("TopK", [key, steps], {"axis": 1, "largest": 0, "sorted": 1}, outputs=2)
    return b.op("GatherElements", [labels, order], {"axis": 1}), count


@converter("CTCLoss", "opset4", onnx="Scan (reverse), Exp, Log, ReduceSum, GatherElements, TopK, Where")
def ctc_loss(ctx: LayerContext) -> oir.Value:
    b = ctx.b
    i64, f32, f64 = oir.DataType.INT64, oir.DataType.FLOAT, oir.DataType.DOUBLE
    merge = ctx.attr_bool("ctc_merge_repeated", True)
    logits = ctx.inputs[0] if ctx.input_type(0).name == "f32" else b.cast(ctx.inputs[0], f32)
    logit_len = b.reshape(b.cast(ctx.inputs[1], i64), [-1])
    labels = b.cast(ctx.inputs[2], i64)
    label_len = b.reshape(b.cast(ctx.inputs[3], i64), [-1])
    if len(ctx.inputs) > 4 and ctx.inputs[4] is not None:
        blank = b.reshape(b.cast(ctx.inputs[4], i64), [])
    else:
        blank = b.op("Sub", [b.reshape(b.shape_of(logits, 2, 3), []), b.i64(1)])
    steps = b.shape_of(logits, 1, 2)  # [1]: T

    packed, count = _decode(ctx, labels, label_len, steps)
    # l' = [blank, l1, blank, l2, ..., blank]: [N, 2T + 1]
    blanks = b.op("Expand", [blank, b.shape_of(packed)])
    ext = b.reshape(b.concat([b.unsqueeze(blanks, [2]), b.unsqueeze(packed, [2])], 2), [0, -1])
    ext = b.concat([ext, b.slice(blanks, [0], [1], [1])], 1)
    states = b.op("Add", [b.op("Mul", [count, b.i64(2)]), b.i64(1)])  # [N]: S

    # log probabilities of every state at every step: [N, T, 2T + 1]
    total = b.reduce("ReduceSum", b.cast(b.op("Exp", [logits]), f64), [2], keepdims=True)
    lp_all = b.cast(b.op("Sub", [b.cast(logits, f64), b.op("Log", [total])]), f32)
    idx = b.op("Expand", [b.unsqueeze(ext, [1]), b.concat([b.shape_of(logits, 0, 2), b.shape_of(ext, 1, 2)], 0)])
    lp = b.op("GatherElements", [lp_all, idx], {"axis": 2})

    # transitions, per state [N, 2T + 1]
    is_blank = b.op("Equal", [ext, blank])
    s_pos = b.unsqueeze(b.op("Range", [b.i64(0), b.reshape(b.shape_of(ext, 1, 2), []), b.i64(1)]), [0])
    fill2 = b.op("Expand", [b.const(np.array(-1, np.int64)), b.concat([b.shape_of(ext, 0, 1), b.i64([2])], 0)])
    skip = b.op("Not", [is_blank])
    if merge:
        skip = b.op("And", [skip, b.op("Not", [b.op("Equal", [ext, _shift(b, ext, 2, fill2)])])])
    stay = None if merge else is_blank
    # start values at a sequence's last step: 0 at states S-2 and S-1
    last_two = b.op("And", [b.op("GreaterOrEqual", [s_pos, b.unsqueeze(b.op("Sub", [states, b.i64(2)]), [1])]),
                            b.op("Less", [s_pos, b.unsqueeze(states, [1])])])
    start = b.op("Where", [last_two, b.const(np.array(0, np.float32)), b.const(_NEG_INF)])
    # step t reads lp[t + 1]: the scanned lp is shifted one step (zeros after the last)
    lp_next = b.op("Pad", [b.slice(lp, [1], [np.iinfo(np.int64).max], [1]), b.i64([0, 0, 0, 0, 1, 0])])
    time = b.op("Range", [b.i64(0), b.reshape(steps, []), b.i64(1)])
    last_step = b.unsqueeze(b.op("Sub", [logit_len, b.i64(1)]), [1])  # [N, 1]

    cb = b.child()
    name = ctx.layer.name or f"ctc_loss_{ctx.layer.id}"
    beta = cb.add_input(cb.names.fresh(f"{name}/beta"), f32, [None, None])
    lp_t = cb.add_input(cb.names.fresh(f"{name}/lp_next"), f32, [None, None])
    t = cb.add_input(cb.names.fresh(f"{name}/time"), i64, [])
    ninf = cb.const(_NEG_INF)
    fill_f = cb.op("Expand", [ninf, cb.concat([cb.shape_of(beta, 0, 1), cb.i64([2])], 0)])
    term = cb.op("Add", [beta, lp_t])
    acc = term if stay is None else cb.op("Where", [stay, term, ninf])
    acc = _logsum(cb, acc, _shift(cb, term, 1, cb.slice(fill_f, [0], [1], [1])))
    acc = _logsum(cb, acc, cb.op("Where", [skip, _shift(cb, term, 2, fill_f), ninf]))
    nxt = cb.op("Where", [cb.op("Equal", [t, last_step]), start,
                          cb.op("Where", [cb.op("Less", [t, last_step]), acc, beta])])
    body = cb.build([nxt], b.names.fresh(f"{name}/body"))
    nxt.type, nxt.shape = oir.TensorType(f32), oir.Shape([None, None])
    init = b.op("Expand", [b.const(_NEG_INF), b.shape_of(ext)])
    beta0 = b.op("Scan", [init, lp_next, time], {
        "body": body, "num_scan_inputs": 2, "scan_input_directions": [1, 1], "scan_input_axes": [1, 0]})

    lp0 = b.op("Gather", [lp, b.i64(0)], {"axis": 1})  # [N, 2T + 1]
    first = b.op("Add", [b.slice(beta0, [0], [1], [1]), b.slice(lp0, [0], [1], [1])])
    second = b.op("Add", [b.slice(beta0, [1], [2], [1]), b.slice(lp0, [1], [2], [1])])
    loss = b.op("Neg", [b.reshape(_logsum(b, first, second), [-1])])
    out_t = onnx_dtype(ctx.output_type(0))
    return loss if out_t == f32 else b.cast(loss, out_t)
