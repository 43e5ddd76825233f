"""Recurrent cells as single-step ONNX LSTM/GRU/RNN (gate orders and bias layouts converted)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx_ir as oir

from ir2onnx.translate.builder import onnx_dtype
from ir2onnx.translate.context import LayerContext
from ir2onnx.translate.registry import converter

# ONNX LSTM gates are (i, o, f, c); OpenVINO's are (f, i, c, o).
LSTM_OV_TO_ONNX = (1, 3, 0, 2)
_ACTIVATIONS = {"sigmoid": "Sigmoid", "tanh": "Tanh", "relu": "Relu"}


def reorder_gates(ctx: LayerContext, value: oir.Value, order: Sequence[int], arr: np.ndarray | None,
                  axis: int = 0) -> oir.Value:
    """Reorder gate blocks on `axis` (constants at conversion time, else Split + Concat)."""
    if list(order) == sorted(order):
        return value
    if arr is not None:
        def reordered(a: np.ndarray) -> np.ndarray:
            blocks = np.split(a, len(order), axis=axis)
            return np.concatenate([blocks[i] for i in order], axis=axis)

        return ctx.b.derived_initializer(np.asarray(arr), ("gates", tuple(order), axis), reordered)
    attrs: dict[str, int] = {"axis": axis}
    if ctx.opset >= 18:
        attrs["num_outputs"] = len(order)
    parts = ctx.b.op_multi("Split", [value], attrs, outputs=len(order))
    return ctx.b.concat([parts[i] for i in order], axis)


def _activations(ctx: LayerContext, defaults: list[str]) -> dict[str, object]:
    """ONNX activations of one direction. OpenVINO reads the first f, g(, h) of the list for every direction
    (OpenVINO's ONNX frontend writes a bidirectional node's list once per direction: "relu, relu"), and none of
    its activations (sigmoid, tanh, relu) takes the alpha/beta parameters."""
    acts = ctx.attr_strs("activations", defaults)
    if len(acts) < len(defaults):
        raise ctx.error(f"{len(acts)} activation(s) given, the cell needs {len(defaults)}")
    acts = acts[:len(defaults)]
    unknown = [a for a in acts if a.lower() not in _ACTIVATIONS]
    if unknown:
        raise ctx.error(f"activation(s) {unknown} are not supported")
    attrs: dict[str, object] = {"activations": [_ACTIVATIONS[a.lower()] for a in acts]}
    clip = ctx.attr_float("clip", 0.0)
    if clip > 0:
        attrs["clip"] = clip
    return attrs


def _wb_rb(ctx: LayerContext, b: oir.Value, axis: int) -> oir.Value:
    """ONNX B = [Wb, Rb] on `axis`: OpenVINO's single (summed) bias goes into Wb, zeros into Rb."""
    return ctx.b.concat([b, ctx.b.op("Mul", [b, ctx.b.const(0, ctx.input_type(0).numpy)])], axis)


def _onnx_bias(ctx: LayerContext, b: oir.Value) -> oir.Value:
    return ctx.b.unsqueeze(_wb_rb(ctx, b, 0), [0])


def _gru_bias(ctx: LayerContext, bias: oir.Value, lbr: bool, axis: int) -> oir.Value:
    """linear_before_reset: OpenVINO B = [bz, br, Wbh, Rbh] -> ONNX [bz, br, Wbh | 0, 0, Rbh]."""
    if not lbr:
        return _wb_rb(ctx, bias, axis)
    attrs: dict[str, int] = {"axis": axis}
    if ctx.opset >= 18:
        attrs["num_outputs"] = 4
    parts = ctx.b.op_multi("Split", [bias], attrs, outputs=4)
    zero = ctx.b.op("Mul", [parts[0], ctx.b.const(0, ctx.input_type(0).numpy)])
    return ctx.b.concat([*parts[:3], zero, zero, parts[3]], axis)


def _emit(ctx: LayerContext, op: str, ins: list[oir.Value | None], attrs: dict[str, object],
          outputs: int) -> tuple[oir.Value, ...]:
    """onnxruntime runs ONNX LSTM/GRU/RNN in float32 only (it lists f64 kernels, which refuse to run): f16, bf16
    and f64 cells compute in f32 and cast back, as OpenVINO's CPU plugin computes them. Integer cells are refused:
    OpenVINO's specification defines the cells for floating-point types, and its CPU plugin's integer results are
    not the f32 cell's rounded (they differ by one and more)."""
    b = ctx.b
    et = ctx.input_type(0)
    if not et.is_float:
        raise ctx.error(f"{ctx.layer.type} on {et.name} is not supported: OpenVINO defines it for floating-point "
                        "types")
    if et.name == "f32":
        return b.op_multi(op, ins, attrs, outputs=outputs)  # type: ignore[arg-type]
    wide = [v if v is None or i == 4 else b.cast(v, oir.DataType.FLOAT) for i, v in enumerate(ins)]
    outs = b.op_multi(op, wide, attrs, outputs=outputs)  # type: ignore[arg-type]
    return tuple(b.cast(o, onnx_dtype(et)) for o in outs)


def _step(ctx: LayerContext, op: str, x: oir.Value, w: oir.Value, r: oir.Value, bias: oir.Value, h: oir.Value,
          c: oir.Value | None, hidden: int, attrs: dict[str, object]) -> list[oir.Value]:
    b = ctx.b
    ins: list[oir.Value | None] = [b.unsqueeze(x, [0]), b.unsqueeze(w, [0]), b.unsqueeze(r, [0]), bias, None,
                                  b.unsqueeze(h, [0])]
    if c is not None:
        ins.append(b.unsqueeze(c, [0]))
    n = 3 if c is not None else 2
    outs = _emit(ctx, op, ins, {"hidden_size": hidden, **attrs}, n)
    return [b.squeeze(o, [0]) for o in outs[1:]]


@converter("LSTMCell", "opset1", "opset4")
def lstm_cell(ctx: LayerContext) -> list[oir.Value]:
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
def gru_cell(ctx: LayerContext) -> list[oir.Value]:
    """Gate order (z, r, h) is the same in both; linear_before_reset keeps Rbh separate (B has 4 blocks)."""
    hidden = ctx.attr_int("hidden_size")
    x, h, w, r = ctx.inputs[:4]
    lbr = ctx.attr_bool("linear_before_reset", False)
    bias = ctx.inputs[4] if len(ctx.inputs) > 4 else ctx.b.const(np.zeros((4 if lbr else 3) * hidden,
                                                                          ctx.input_type(0).numpy))
    onnx_b = ctx.b.unsqueeze(_gru_bias(ctx, bias, lbr, 0), [0])
    attrs = _activations(ctx, ["sigmoid", "tanh"])
    attrs["linear_before_reset"] = int(lbr)
    return _step(ctx, "GRU", x, w, r, onnx_b, h, None, hidden, attrs)


@converter("RNNCell", "opset1")
def rnn_cell(ctx: LayerContext) -> list[oir.Value]:
    hidden = ctx.attr_int("hidden_size")
    x, h, w, r = ctx.inputs[:4]
    bias = ctx.inputs[4] if len(ctx.inputs) > 4 else ctx.b.const(np.zeros(hidden, ctx.input_type(0).numpy))
    return _step(ctx, "RNN", x, w, r, _onnx_bias(ctx, bias), h, None, hidden, _activations(ctx, ["tanh"]))


_DIRECTIONS = {"forward": "forward", "reverse": "reverse", "bidirectional": "bidirectional"}


def _sequence(ctx: LayerContext, op: str, gates: int, order: Sequence[int], has_c: bool,
              attrs: dict[str, object], gru_lbr: bool | None = None) -> list[oir.Value]:
    """*Sequence-5: batch-major X [B, T, I], H0 [B, D, H], W [D, G*H, I]; ONNX (layout 0) is time-major, so
    inputs and outputs are transposed around the op: Y [T, D, B, H] -> [B, D, T, H], Y_h [D, B, H] -> [B, D, H]."""
    b = ctx.b
    hidden = ctx.attr_int("hidden_size")
    direction = ctx.attr_str("direction", "forward").lower()
    if direction not in _DIRECTIONS:
        raise ctx.error(f"direction '{direction}' is not supported")
    x, h0 = ctx.inputs[0], ctx.inputs[1]
    c0 = ctx.inputs[2] if has_c else None
    k = 3 if has_c else 2  # index of seq_lengths
    seq_len, w, r, bias = ctx.inputs[k], ctx.inputs[k + 1], ctx.inputs[k + 2], ctx.inputs[k + 3]
    w = reorder_gates(ctx, w, order, ctx.const(k + 1), axis=1)
    r = reorder_gates(ctx, r, order, ctx.const(k + 2), axis=1)
    bias = reorder_gates(ctx, bias, order, ctx.const(k + 3), axis=1)
    onnx_b = _gru_bias(ctx, bias, bool(gru_lbr), 1) if gru_lbr is not None else _wb_rb(ctx, bias, 1)
    perm = {"perm": [1, 0, 2]}
    ins = [b.op("Transpose", [x], perm), w, r, onnx_b, b.cast(seq_len, oir.DataType.INT32),
           b.op("Transpose", [h0], perm)]
    if c0 is not None:
        ins.append(b.op("Transpose", [c0], perm))
    if direction == "bidirectional":  # ONNX lists activations once per direction
        attrs = {k: list(v) * 2 if k == "activations" else v for k, v in attrs.items()}  # type: ignore[call-overload]
    all_attrs = {"hidden_size": hidden, "direction": _DIRECTIONS[direction], **attrs}
    outs = _emit(ctx, op, ins, all_attrs, 3 if has_c else 2)
    if direction == "bidirectional":
        y = b.op("Transpose", [outs[0]], {"perm": [2, 1, 0, 3]})
        return [y] + [b.op("Transpose", [o], perm) for o in outs[1:]]
    # one direction: its axis has size 1, so Y moves as [T, B, H] -> [B, T, H] (onnxruntime transposes [T, 1, B, H]
    # half as fast) and the states do not move at all; the IR's Squeeze of that axis cancels the Unsqueeze
    # (reshape_chains.py), so that the Transpose writes the output itself (a Squeeze writing it is a copy)
    y = b.unsqueeze(b.op("Transpose", [b.squeeze(outs[0], [1])], perm), [1])
    return [y] + [b.unsqueeze(b.squeeze(o, [0]), [1]) for o in outs[1:]]


@converter("LSTMSequence", "opset1", "opset5")
def lstm_sequence(ctx: LayerContext) -> list[oir.Value]:
    if len(ctx.inputs) > 7:
        p = ctx.const(7)
        if p is None or np.any(p != 0):
            raise ctx.error("LSTMSequence peepholes (input P) are not supported")
    if ctx.attr_str("weights_format", "fico").lower() != "fico":
        raise ctx.error("LSTMSequence weights_format other than fico is not supported")
    return _sequence(ctx, "LSTM", 4, LSTM_OV_TO_ONNX, True, _activations(ctx, ["sigmoid", "tanh", "tanh"]))


@converter("GRUSequence", "opset5")
def gru_sequence(ctx: LayerContext) -> list[oir.Value]:
    lbr = ctx.attr_bool("linear_before_reset", False)
    attrs = _activations(ctx, ["sigmoid", "tanh"])
    attrs["linear_before_reset"] = int(lbr)
    return _sequence(ctx, "GRU", 3, (0, 1, 2), False, attrs, gru_lbr=lbr)


@converter("RNNSequence", "opset5")
def rnn_sequence(ctx: LayerContext) -> list[oir.Value]:
    return _sequence(ctx, "RNN", 1, (0,), False, _activations(ctx, ["tanh"]))
