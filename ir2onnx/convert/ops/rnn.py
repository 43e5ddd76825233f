"""Recurrent cells as single-step ONNX LSTM/GRU/RNN (gate orders and bias layouts converted)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx_ir as ir

from ir2onnx.convert.context import LayerContext
from ir2onnx.convert.registry import converter

# ONNX LSTM gates are (i, o, f, c); OpenVINO's are (f, i, c, o).
LSTM_OV_TO_ONNX = (1, 3, 0, 2)
_ACTIVATIONS = {"sigmoid": "Sigmoid", "tanh": "Tanh", "relu": "Relu"}


def reorder_gates(ctx: LayerContext, value: ir.Value, order: Sequence[int], arr: np.ndarray | None) -> ir.Value:
    """Reorder gate blocks on axis 0 (constants at conversion time, else Split + Concat)."""
    if list(order) == sorted(order):
        return value
    if arr is not None:
        blocks = np.split(np.asarray(arr), len(order), axis=0)
        return ctx.b.const(np.concatenate([blocks[i] for i in order], axis=0))
    parts = ctx.b.op_multi("Split", [value], {"num_outputs": len(order)} if ctx.opset >= 18 else {"axis": 0},
                           outputs=len(order)) if ctx.opset >= 18 else ctx.b.op_multi("Split", [value], {"axis": 0},
                                                                                      outputs=len(order))
    return ctx.b.concat([parts[i] for i in order], 0)


def _activations(ctx: LayerContext, defaults: list[str]) -> dict[str, object]:
    acts = ctx.attr_strs("activations", defaults)
    unknown = [a for a in acts if a.lower() not in _ACTIVATIONS]
    if unknown:
        raise ctx.error(f"activation(s) {unknown} are not supported")
    attrs: dict[str, object] = {"activations": [_ACTIVATIONS[a.lower()] for a in acts]}
    alpha, beta = ctx.attr_floats("activations_alpha", []), ctx.attr_floats("activations_beta", [])
    if alpha:
        attrs["activation_alpha"] = alpha
    if beta:
        attrs["activation_beta"] = beta
    clip = ctx.attr_float("clip", 0.0)
    if clip > 0:
        attrs["clip"] = clip
    return attrs


def _onnx_bias(ctx: LayerContext, b: ir.Value, wb_rb: tuple[ir.Value, ir.Value] | None = None) -> ir.Value:
    """ONNX B = [Wb, Rb] with a leading num_directions axis; OpenVINO's single bias goes into Wb."""
    wb, rb = wb_rb if wb_rb is not None else (b, ctx.b.op("Mul", [b, ctx.b.const(0, ctx.input_type(0).numpy)]))
    return ctx.b.unsqueeze(ctx.b.concat([wb, rb], 0), [0])


def _step(ctx: LayerContext, op: str, x: ir.Value, w: ir.Value, r: ir.Value, bias: ir.Value, h: ir.Value,
          c: ir.Value | None, hidden: int, attrs: dict[str, object]) -> list[ir.Value]:
    b = ctx.b
    ins = [b.unsqueeze(x, [0]), b.unsqueeze(w, [0]), b.unsqueeze(r, [0]), bias, None, b.unsqueeze(h, [0])]
    if c is not None:
        ins.append(b.unsqueeze(c, [0]))
    n = 3 if c is not None else 2
    outs = b.op_multi(op, ins, {"hidden_size": hidden, **attrs}, outputs=n)  # type: ignore[arg-type]
    return [b.squeeze(o, [0]) for o in outs[1:]]


@converter("LSTMCell", "opset1", "opset4")
def lstm_cell(ctx: LayerContext) -> list[ir.Value]:
    hidden = ctx.attr_int("hidden_size")
    x, h, c = ctx.inputs[:3]
    if len(ctx.inputs) == 5:  # legacy form: W and R concatenated on axis 1, then B
        wr, bias = ctx.inputs[3], ctx.inputs[4]
        wr_arr = ctx.const(3)
        if wr_arr is not None:
            n_in = wr_arr.shape[1] - hidden
            w_arr, r_arr = wr_arr[:, :n_in], wr_arr[:, n_in:]
            w, r = ctx.b.const(w_arr), ctx.b.const(r_arr)
        else:
            n_in = ctx.input_rank(0) and ctx.input_dims(0)[1]
            if n_in is None:
                raise ctx.error("legacy LSTMCell needs a static input size")
            w = ctx.b.slice(wr, [0], [n_in], [1])
            r = ctx.b.slice(wr, [n_in], [n_in + hidden], [1])
            w_arr = r_arr = None
        b_arr = ctx.const(4)
    else:
        w, r, bias = ctx.inputs[3:6]
        w_arr, r_arr, b_arr = ctx.const(3), ctx.const(4), ctx.const(5)
        if len(ctx.inputs) > 6:
            p = ctx.const(6)
            if p is None or np.any(p != 0):
                raise ctx.error("LSTMCell peepholes (input P) are not supported")
    if ctx.attr_bool("input_forget", False):
        raise ctx.error("LSTMCell input_forget=true is not supported")
    w = reorder_gates(ctx, w, LSTM_OV_TO_ONNX, w_arr)
    r = reorder_gates(ctx, r, LSTM_OV_TO_ONNX, r_arr)
    bias = reorder_gates(ctx, bias, LSTM_OV_TO_ONNX, b_arr)
    return _step(ctx, "LSTM", x, w, r, _onnx_bias(ctx, bias), h, c, hidden,
                 _activations(ctx, ["sigmoid", "tanh", "tanh"]))


@converter("GRUCell", "opset3")
def gru_cell(ctx: LayerContext) -> list[ir.Value]:
    """Gate order (z, r, h) is the same in both; linear_before_reset keeps Rbh separate (B has 4 blocks)."""
    hidden = ctx.attr_int("hidden_size")
    x, h, w, r = ctx.inputs[:4]
    lbr = ctx.attr_bool("linear_before_reset", False)
    bias = ctx.inputs[4] if len(ctx.inputs) > 4 else ctx.b.const(np.zeros((4 if lbr else 3) * hidden,
                                                                          ctx.input_type(0).numpy))
    if lbr:
        parts = ctx.b.op_multi("Split", [bias], {"axis": 0, "num_outputs": 4} if ctx.opset >= 18 else {"axis": 0},
                               outputs=4)
        zero = ctx.b.op("Mul", [parts[0], ctx.b.const(0, ctx.input_type(0).numpy)])
        onnx_b = _onnx_bias(ctx, bias, (ctx.b.concat(parts[:3], 0), ctx.b.concat([zero, zero, parts[3]], 0)))
    else:
        onnx_b = _onnx_bias(ctx, bias)
    attrs = _activations(ctx, ["sigmoid", "tanh"])
    attrs["linear_before_reset"] = int(lbr)
    return _step(ctx, "GRU", x, w, r, onnx_b, h, None, hidden, attrs)


@converter("RNNCell", "opset1")
def rnn_cell(ctx: LayerContext) -> list[ir.Value]:
    hidden = ctx.attr_int("hidden_size")
    x, h, w, r = ctx.inputs[:4]
    bias = ctx.inputs[4] if len(ctx.inputs) > 4 else ctx.b.const(np.zeros(hidden, ctx.input_type(0).numpy))
    return _step(ctx, "RNN", x, w, r, _onnx_bias(ctx, bias), h, None, hidden, _activations(ctx, ["tanh"]))
