"""TensorIterator/Loop models for proving the check: dynamic dimensions, integer trip counts, recurrent cells,
several sliced inputs and concatenated outputs, a fused LSTM sequence."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import openvino as ov
import openvino.opset13 as ops

from tests.translate.control_flow.builders import loop_model, ti_lstm


def _w(rng: np.random.Generator, *shape: int) -> ov.Node:
    return ops.constant((rng.standard_normal(shape) * 0.5).astype(np.float32))


def ti_lstm_dynamic() -> ov.Model:
    """TensorIterator over LSTMCell with dynamic batch and time: the default inputs choose both."""
    rng = np.random.default_rng(3)
    hidden, n_in = 4, 3
    X = ops.parameter([-1, -1, n_in], np.float32, name="X")
    H = ops.parameter([-1, hidden], np.float32, name="H0")
    C = ops.parameter([-1, hidden], np.float32, name="C0")
    bx = ops.parameter([-1, 1, n_in], np.float32, name="x_t")
    bh = ops.parameter([-1, hidden], np.float32, name="h_prev")
    bc = ops.parameter([-1, hidden], np.float32, name="c_prev")
    cell = ops.lstm_cell(ops.squeeze(bx, [1]), bh, bc, _w(rng, 4 * hidden, n_in), _w(rng, 4 * hidden, hidden),
                         _w(rng, 4 * hidden), hidden)
    r_h, r_c = ops.result(cell.output(0)), ops.result(cell.output(1))
    r_y = ops.result(ops.unsqueeze(cell.output(0), 1))
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([r_h, r_c, r_y], [bx, bh, bc]))
    ti.set_sliced_input(bx, X.output(0), 0, 1, 1, -1, 1)
    ti.set_merged_input(bh, H.output(0), r_h.output(0))
    ti.set_merged_input(bc, C.output(0), r_c.output(0))
    return ov.Model([ti.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 1), ti.get_iter_value(r_h.output(0), -1),
                     ti.get_iter_value(r_c.output(0), -1)], [X, H, C])


def ti_gru_reverse() -> ov.Model:
    """TensorIterator over GRUCell walking the time axis backwards (a dynamic feature-free batch)."""
    rng = np.random.default_rng(4)
    hidden, n_in = 5, 4
    X = ops.parameter([-1, 6, n_in], np.float32, name="X")
    H = ops.parameter([-1, hidden], np.float32, name="H0")
    bx = ops.parameter([-1, 1, n_in], np.float32, name="x_t")
    bh = ops.parameter([-1, hidden], np.float32, name="h_prev")
    cell = ops.gru_cell(ops.squeeze(bx, [1]), bh, _w(rng, 3 * hidden, n_in), _w(rng, 3 * hidden, hidden),
                        _w(rng, 3 * hidden), hidden)
    r_h = ops.result(cell.output(0))
    r_y = ops.result(ops.unsqueeze(cell.output(0), 1))
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([r_h, r_y], [bx, bh]))
    ti.set_sliced_input(bx, X.output(0), -1, -1, 1, 0, 1)
    ti.set_merged_input(bh, H.output(0), r_h.output(0))
    return ov.Model([ti.get_concatenated_slices(r_y.output(0), -1, -1, 1, 0, 1), ti.get_iter_value(r_h.output(0), -1)],
                    [X, H])


def ti_two_outputs() -> ov.Model:
    """TensorIterator with a sliced input, an invariant input, two states and two concatenated outputs on different
    axes (one of them written backwards)."""
    X = ops.parameter([3, 5, 4], np.float32, name="X")
    W = ops.parameter([4, 4], np.float32, name="W")
    S = ops.parameter([3, 4], np.float32, name="S")
    T = ops.parameter([3, 4], np.float32, name="T")
    bx = ops.parameter([3, 1, 4], np.float32, name="bx")
    bw = ops.parameter([4, 4], np.float32, name="bw")
    bs = ops.parameter([3, 4], np.float32, name="bs")
    bt = ops.parameter([3, 4], np.float32, name="bt")
    ns = ops.tanh(ops.add(ops.matmul(bs, bw, False, False), ops.squeeze(bx, [1])))
    nt = ops.add(ops.multiply(bt, ops.constant(np.float32(0.5))), ns)
    r_s, r_t = ops.result(ns), ops.result(nt)
    r_y = ops.result(ops.unsqueeze(ns, 1))
    r_z = ops.result(ops.unsqueeze(ops.sigmoid(nt), 0))
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([r_s, r_t, r_y, r_z], [bx, bw, bs, bt]))
    ti.set_sliced_input(bx, X.output(0), 0, 1, 1, -1, 1)
    ti.set_invariant_input(bw, W.output(0))
    ti.set_merged_input(bs, S.output(0), r_s.output(0))
    ti.set_merged_input(bt, T.output(0), r_t.output(0))
    return ov.Model([ti.get_iter_value(r_s.output(0), -1), ti.get_iter_value(r_t.output(0), -1),
                     ti.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 1),
                     ti.get_concatenated_slices(r_z.output(0), -1, -1, 1, 0, 0)], [X, W, S, T])


def loop_trip_input() -> ov.Model:
    """Loop whose trip count is an integer model input (the form PyTorch exports `for i in range(n)` to)."""
    return loop_model(None, True, [-1, 3])


def loop_lstm_sliced() -> ov.Model:
    """Loop over LSTMCell, reading time step `i` of X through a sliced input; the trip count is an input."""
    rng = np.random.default_rng(5)
    hidden, n_in, steps = 3, 2, 6
    X = ops.parameter([2, steps, n_in], np.float32, name="X")
    N = ops.parameter([], np.int32, name="n")
    H = ops.parameter([2, hidden], np.float32, name="H0")
    C = ops.parameter([2, hidden], np.float32, name="C0")
    bx = ops.parameter([2, 1, n_in], np.float32, name="x_t")
    bh = ops.parameter([2, hidden], np.float32, name="h_prev")
    bc = ops.parameter([2, hidden], np.float32, name="c_prev")
    cell = ops.lstm_cell(ops.squeeze(bx, [1]), bh, bc, _w(rng, 4 * hidden, n_in), _w(rng, 4 * hidden, hidden),
                         _w(rng, 4 * hidden), hidden)
    r_c_ = ops.result(ops.constant(True))
    r_h, r_c = ops.result(cell.output(0)), ops.result(cell.output(1))
    r_y = ops.result(ops.unsqueeze(cell.output(0), 1))
    loop = ops.loop(ops.convert(N, np.int64), ops.constant(True))
    loop.set_function(ov.Model([r_c_, r_h, r_c, r_y], [bx, bh, bc]))
    loop.set_special_body_ports([-1, 0])
    loop.set_sliced_input(bx, X.output(0), 0, 1, 1, -1, 1)
    loop.set_merged_input(bh, H.output(0), r_h.output(0))
    loop.set_merged_input(bc, C.output(0), r_c.output(0))
    return ov.Model([loop.get_iter_value(r_h.output(0), -1), loop.get_iter_value(r_c.output(0), -1),
                     loop.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 1)], [X, N, H, C])


def loop_while() -> ov.Model:
    """A while loop: no trip count; the body grows a state by |x| + 0.1 until its sum reaches 8 (several
    iterations whatever x is)."""
    X = ops.parameter([2, 3], np.float32, name="X")
    bx = ops.parameter([2, 3], np.float32, name="bx")
    bs = ops.parameter([2, 3], np.float32, name="bs")
    ns = ops.add(bs, ops.add(ops.abs(bx), ops.constant(np.float32(0.1))))
    c = ops.less(ops.reduce_sum(ns, [0, 1], False), ops.constant(np.float32(8.0)))
    r_c, r_s = ops.result(c), ops.result(ns)
    r_y = ops.result(ops.unsqueeze(ops.tanh(ns), 0))
    loop = ops.loop(ops.constant(np.int64(-1)), ops.constant(True))
    loop.set_function(ov.Model([r_c, r_s, r_y], [bx, bs]))
    loop.set_special_body_ports([-1, 0])
    loop.set_invariant_input(bx, X.output(0))
    loop.set_merged_input(bs, ops.multiply(X, ops.constant(np.float32(0.0))).output(0), r_s.output(0))
    return ov.Model([loop.get_iter_value(r_s.output(0), -1),
                     loop.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 0)], [X])


def lstm_sequence() -> ov.Model:
    """LSTMSequence-5: the fused form (one ONNX LSTM node)."""
    rng = np.random.default_rng(6)
    hidden, n_in = 4, 3
    X = ops.parameter([2, -1, n_in], np.float32, name="X")
    H = ops.parameter([2, 1, hidden], np.float32, name="H0")
    C = ops.parameter([2, 1, hidden], np.float32, name="C0")
    lens = ops.broadcast(ops.gather(ops.shape_of(X), ops.constant(np.int64(1)), ops.constant(np.int64(0))),
                         ops.constant(np.array([2], np.int64)))
    seq = ops.lstm_sequence(X, H, C, lens, _w(rng, 1, 4 * hidden, n_in), _w(rng, 1, 4 * hidden, hidden),
                            _w(rng, 1, 4 * hidden), hidden, "forward")
    return ov.Model([seq.output(0), seq.output(1), seq.output(2)], [X, H, C])


# name -> (builder, convert with recurrent fusion). Recurrent loops are checked both as loops (Scan/Loop with a
# single-step cell inside) and fused into one ONNX LSTM/GRU node.
MODELS: dict[str, tuple[Callable[[], ov.Model], bool]] = {
    "ti_lstm": (lambda: ti_lstm(2, 5, 3, 4), False),
    "ti_lstm_fused": (lambda: ti_lstm(2, 5, 3, 4), True),
    "ti_lstm_dynamic": (ti_lstm_dynamic, False),
    "ti_lstm_dynamic_fused": (ti_lstm_dynamic, True),
    "ti_gru_reverse": (ti_gru_reverse, False),
    "ti_gru_reverse_fused": (ti_gru_reverse, True),
    "ti_two_outputs": (ti_two_outputs, True),
    "loop_trip_input": (loop_trip_input, True),
    "loop_lstm_sliced": (loop_lstm_sliced, True),
    "loop_while": (loop_while, True),
    "lstm_sequence": (lstm_sequence, True),
}
