"""The networks scripts/bench/bench_recurrent.py times, built with OpenVINO's Python API in the forms OpenVINO's
frontends and transformations give them (TensorIterator cells, Keras and tf_keras loops, PyTorch sequence ops, a
generic Loop), the checks that the rebuilt Keras and PyTorch forms match tests/fixtures, and the --floor model (a
recurrent layer's matrix products alone, in ONNX).
"""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov
import openvino.opset13 as ops

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures"


def _w(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return (rng.standard_normal(shape) * 0.05).astype(np.float32)


# ---- networks


def ti_cell(kind: str, steps: int, batch: int, inputs: int, hidden: int, extra: bool = False) -> ov.Model:
    """TensorIterator over one LSTMCell/GRUCell/RNNCell on axis 1; outputs the concatenated H. `extra`: the body
    also projects its slice before the cell (Relu(x_t W_p + b_p)) and outputs tanh(h W_o + b_o) instead of h."""
    rng = np.random.default_rng(0)
    g = {"lstm": 4, "gru": 3, "rnn": 1}[kind]
    X = ops.parameter([batch, steps, inputs], np.float32, name="X")
    H0 = ops.parameter([batch, hidden], np.float32, name="H0")
    params = [X, H0]
    bx = ops.parameter([batch, 1, inputs], np.float32)
    bh = ops.parameter([batch, hidden], np.float32)
    body_params = [bx, bh]
    x = ops.squeeze(bx, [1])
    w, r, b = ops.constant(_w(rng, g * hidden, inputs)), ops.constant(_w(rng, g * hidden, hidden)), \
        ops.constant(_w(rng, g * hidden))
    if extra:
        x = ops.relu(ops.add(ops.matmul(x, ops.constant(_w(rng, inputs, inputs)), False, False),
                             ops.constant(_w(rng, inputs))))
    if kind == "lstm":
        C0 = ops.parameter([batch, hidden], np.float32, name="C0")
        bc = ops.parameter([batch, hidden], np.float32)
        params.append(C0)
        body_params.append(bc)
        cell = ops.lstm_cell(x, bh, bc, w, r, b, hidden)
        new_h, new_c = cell.output(0), cell.output(1)
    elif kind == "gru":
        new_h, new_c = ops.gru_cell(x, bh, w, r, b, hidden).output(0), None
    else:
        new_h, new_c = ops.rnn_cell(x, bh, w, r, b, hidden, ["tanh"], [], [], 0.0).output(0), None
    y = ops.tanh(ops.add(ops.matmul(new_h, ops.constant(_w(rng, hidden, hidden)), False, False),
                         ops.constant(_w(rng, hidden)))) if extra else new_h
    r_h, r_y = ops.result(new_h), ops.result(ops.unsqueeze(y, 1))
    results = [r_h, r_y] + ([ops.result(new_c)] if new_c is not None else [])
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model(results, body_params))
    ti.set_sliced_input(bx, X.output(0), 0, 1, 1, -1, 1)
    ti.set_merged_input(bh, H0.output(0), r_h.output(0))
    if kind == "lstm":
        ti.set_merged_input(body_params[2], params[2].output(0), results[2].output(0))
    return ov.Model([ti.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 1)], params)


def streaming(steps: int, batch: int, inputs: int, hidden: int) -> ov.Model:
    """The TensorIterator LSTM after OpenVINO's LowLatency2, as a streaming speech model is deployed: its states
    live in variables across calls, each call takes a chunk of `steps` frames."""
    from openvino._offline_transformations import apply_low_latency_transformation

    model = ti_cell("lstm", steps, batch, inputs, hidden)
    apply_low_latency_transformation(model, True)
    return model


def ti_stacked(steps: int, batch: int, inputs: int, hidden: int) -> ov.Model:
    """TensorIterator whose body runs two LSTMCells, the second on the first's new h (a two-layer network in one
    loop, as Model Optimizer wrote TensorFlow's MultiRNNCell); outputs the second's h per step."""
    rng = np.random.default_rng(0)
    X = ops.parameter([batch, steps, inputs], np.float32, name="X")
    bx = ops.parameter([batch, 1, inputs], np.float32)
    states = [ops.parameter([batch, hidden], np.float32) for _ in range(4)]
    x: Any = ops.squeeze(bx, [1])
    results = []
    for layer in range(2):
        w = ops.constant(_w(rng, 4 * hidden, inputs if layer == 0 else hidden))
        cell = ops.lstm_cell(x, states[2 * layer], states[2 * layer + 1], w, ops.constant(_w(rng, 4 * hidden, hidden)),
                             ops.constant(_w(rng, 4 * hidden)), hidden)
        results += [ops.result(cell.output(0)), ops.result(cell.output(1))]
        x = cell.output(0)
    r_y = ops.result(ops.unsqueeze(x, 1))
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([*results, r_y], [bx, *states]))
    ti.set_sliced_input(bx, X.output(0), 0, 1, 1, -1, 1)
    zero = ops.constant(np.zeros((batch, hidden), np.float32))
    for p, r in zip(states, results):
        ti.set_merged_input(p, zero.output(0), r.output(0))
    return ov.Model([ti.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 1)], [X])


def _keras_cell(kind: str, rng: np.random.Generator, x: Any, h: Any, c: Any, inputs: int, hidden: int) -> list[Any]:
    """The cell as the TensorFlow frontend writes Keras' LSTMCell / GRUCell (reset_after)."""
    H = hidden
    if kind == "lstm":
        z = ops.add(ops.add(ops.matmul(x, ops.constant(_w(rng, 4 * H, inputs)), False, True),
                            ops.matmul(h, ops.constant(_w(rng, 4 * H, H)), False, True)),
                    ops.constant(_w(rng, 1, 4 * H)))
        i, f, g, o = ops.split(z, ops.constant(np.int32(1)), 4).outputs()
        c_new = ops.add(ops.multiply(ops.sigmoid(f), c), ops.multiply(ops.sigmoid(i), ops.tanh(g)))
        return [ops.multiply(ops.sigmoid(o), ops.tanh(c_new)), c_new]
    xz, xr, xn = ops.split(ops.add(ops.matmul(x, ops.constant(_w(rng, 3 * H, inputs)), False, True),
                                   ops.constant(_w(rng, 1, 3 * H))), ops.constant(np.int32(-1)), 3).outputs()
    rec = ops.add(ops.matmul(h, ops.constant(_w(rng, 3 * H, H)), False, True), ops.constant(_w(rng, 1, 3 * H)))

    def part(k: int) -> Any:
        begin = np.array([0, k * H], np.int32)
        end = np.array([0, (k + 1) * H if k < 2 else 0], np.int32)
        return ops.strided_slice(rec, begin, end, np.array([1, 1], np.int32), [1, 0] if k else [1, 1],
                                 [1, 0] if k < 2 else [1, 1])
    z = ops.sigmoid(ops.add(xz, part(0)))
    r = ops.sigmoid(ops.add(xr, part(1)))
    n = ops.tanh(ops.add(xn, ops.multiply(r, part(2))))
    return [ops.add(ops.multiply(z, h), ops.multiply(ops.subtract(ops.constant(np.ones((1, 1), np.float32)), z), n))]


def _keras_loop(kind: str, x_tm: Any, zeros: Any, steps: int, inputs: int, hidden: int, seed: int,
                mask_tm: Any = None, last: bool = False) -> Any:
    """The frontend's Loop: counters, `counter + 1 < steps`, Gather at the counter, ScatterUpdate into a buffer.
    `mask_tm` ([steps, batch, 1] booleans, behind a Masking layer): a masked step keeps the states and repeats the
    last output (Select), the last output carried. `last` (return_sequences=False): the buffer is one row,
    overwritten at every step."""
    rng = np.random.default_rng(seed)
    i32 = np.int32
    counter, t = ops.parameter([], i32), ops.parameter([], i32)
    rows = 1 if last else steps
    buf = ops.parameter([rows, -1, -1], np.float32)
    bh = ops.parameter([-1, hidden], np.float32)
    xs = ops.parameter([steps, -1, inputs], np.float32)
    body_params = [xs, bh]
    bc = None
    if kind == "lstm":
        bc = ops.parameter([-1, hidden], np.float32)
        body_params.append(bc)
    body_params += [buf, t, counter]
    if mask_tm is not None:
        bm, prev = ops.parameter([steps, -1, 1], bool), ops.parameter([-1, hidden], np.float32)
        body_params += [bm, prev]
    one = ops.constant(i32(1))
    counter_next, t_next = ops.add(counter, one), ops.add(t, one)
    cond = ops.logical_and(ops.less(counter_next, ops.constant(i32(steps))), ops.less(t_next, ops.constant(i32(steps))))
    x = ops.gather(xs, t, ops.constant(np.array([0], i32)))
    new = _keras_cell(kind, rng, x, bh, bc, inputs, hidden)
    out = new[0]
    if mask_tm is not None:
        m = ops.gather(bm, t, ops.constant(np.array([0], i32)))
        out = ops.select(m, new[0], prev)
        new = [ops.select(m, new[0], bh), *([ops.select(m, new[1], bc)] if kind == "lstm" else [])]
    zero1 = ops.constant(np.array([0], np.int64))
    shape = ops.concat([ops.slice(ops.shape_of(buf, "i32"), zero1, ops.constant(np.array([1], np.int64)),
                                  ops.constant(np.array([1], np.int64)), zero1), ops.shape_of(out, "i32")], 0)
    at = ops.constant(np.array([0], i32)) if last else ops.reshape(t, ops.constant(np.array([-1], np.int64)), False)
    written = ops.scatter_update(ops.broadcast(buf, shape), at, ops.unsqueeze(out, zero1), zero1)
    r_cond, r_buf, r_h = ops.result(cond), ops.result(written), ops.result(new[0])
    r_t, r_counter = ops.result(t_next), ops.result(counter_next)
    results = [r_cond, r_h] + ([ops.result(new[1])] if kind == "lstm" else []) + [r_buf, r_t, r_counter]
    if mask_tm is not None:
        r_prev = ops.result(out)
        results.append(r_prev)
    loop = ops.loop(ops.constant(i32(-1)), ops.constant(True))
    loop.set_function(ov.Model(results, body_params))
    loop.set_special_body_ports([-1, 0])
    loop.set_invariant_input(xs, x_tm.output(0))
    loop.set_merged_input(bh, zeros.output(0), r_h.output(0))
    if kind == "lstm":
        loop.set_merged_input(bc, zeros.output(0), results[2].output(0))  # type: ignore[arg-type]
    loop.set_merged_input(buf, ops.constant(np.zeros((rows, 1, 1), np.float32)).output(0), r_buf.output(0))
    loop.set_merged_input(t, ops.constant(i32(0)).output(0), r_t.output(0))
    loop.set_merged_input(counter, ops.constant(i32(0)).output(0), r_counter.output(0))
    if mask_tm is not None:
        loop.set_invariant_input(bm, mask_tm.output(0))
        loop.set_merged_input(prev, zeros.output(0), r_prev.output(0))
    return loop.get_iter_value(r_buf.output(0), -1)


def _keras2_gru_cell(rng: np.random.Generator, x: Any, h: Any, inputs: int, hidden: int) -> Any:
    """tf_keras' GRUCell (reset_after) as the TensorFlow frontend writes it (tests/fixtures/tf_keras2_gru_*): the
    input and recurrent products each split in three, 1 - z as a Subtract."""
    H = hidden
    one = ops.constant(np.int32(1))
    xz, xr, xn = ops.split(ops.add(ops.matmul(x, ops.constant(_w(rng, 3 * H, inputs)), False, True),
                                   ops.constant(_w(rng, 1, 3 * H))), one, 3).outputs()
    hz, hr, hn = ops.split(ops.add(ops.matmul(h, ops.constant(_w(rng, 3 * H, H)), False, True),
                                   ops.constant(_w(rng, 1, 3 * H))), one, 3).outputs()
    z = ops.sigmoid(ops.add(xz, hz))
    r = ops.sigmoid(ops.add(xr, hr))
    n = ops.tanh(ops.add(xn, ops.multiply(r, hn)))
    return ops.add(ops.multiply(z, h), ops.multiply(ops.subtract(ops.constant(np.ones((1, 1), np.float32)), z), n))


def _keras2_loop(kind: str, x_tm: Any, zeros: Any, inputs: int, hidden: int, seed: int, last: bool = False) -> Any:
    """tf_keras' (Keras 2) while loop as the TensorFlow frontend converts it (tests/fixtures/tf_keras2_*): a Loop of
    trip count -1 run while 0 < steps, the time step sliced by the Loop itself, `t + 1 < steps` as the condition,
    the time and loop counters carried; the new h as a concatenated output (`last`: its last value)."""
    rng = np.random.default_rng(seed)
    i32 = np.int32
    counter, t, bh = ops.parameter([], i32), ops.parameter([], i32), ops.parameter([-1, hidden], np.float32)
    bc = ops.parameter([-1, hidden], np.float32) if kind == "lstm" else None
    steps, xs = ops.parameter([], i32), ops.parameter([1, -1, inputs], np.float32)
    one, zero1 = ops.constant(i32(1)), ops.constant(np.array([0], np.int64))
    t_next = ops.add(t, one)
    x = ops.squeeze(xs, zero1)
    new = _keras_cell("lstm", rng, x, bh, bc, inputs, hidden) if kind == "lstm" else \
        [_keras2_gru_cell(rng, x, bh, inputs, hidden)]
    r_cond, r_counter, r_t = ops.result(ops.less(t_next, steps)), ops.result(ops.add(counter, one)), ops.result(t_next)
    r_states = [ops.result(v) for v in new]
    r_y = ops.result(ops.unsqueeze(new[0], zero1))
    params = [counter, t, bh] + ([bc] if bc is not None else []) + [steps, xs]
    n_steps = ops.gather(ops.shape_of(x_tm, "i32"), ops.constant(np.int64(0)), ops.constant(np.int64(0)))
    loop = ops.loop(ops.constant(i32(-1)), ops.less(ops.constant(i32(0)), n_steps))
    loop.set_function(ov.Model([r_counter, r_t, *r_states, r_y, r_cond], params))
    loop.set_special_body_ports([-1, len(r_states) + 3])
    loop.set_merged_input(counter, ops.constant(i32(0)).output(0), r_counter.output(0))
    loop.set_merged_input(t, ops.constant(i32(0)).output(0), r_t.output(0))
    for p, r in zip(params[2:], r_states):
        loop.set_merged_input(p, zeros.output(0), r.output(0))
    loop.set_invariant_input(steps, n_steps.output(0))
    loop.set_sliced_input(xs, x_tm.output(0), 0, 1, 1, -1, 0)
    if last:
        y = loop.get_iter_value(r_y.output(0), -1)
        return ops.strided_slice(y, np.array([0], i32), np.array([1], i32), np.array([1], i32), [0], [0], [], [1])
    return loop.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 0)


def keras2_layer(kind: str, steps: int, inputs: int, hidden: int) -> ov.Model:
    """tf_keras (Keras 2) GRU / LSTM (return_sequences) and GRU / LSTM / bidirectional LSTM returning their last
    output only (gru_last, lstm_last, bilstm_last), as the TensorFlow frontend converts them. OpenVINO runs these
    loops faster than Keras 3's (no Gather and TensorList buffer per step)."""
    X = ops.parameter([-1, steps, inputs], np.float32, name="input_1")
    batch = ops.gather(ops.shape_of(X, "i32"), ops.constant(np.array([0], np.int64)), ops.constant(np.int64(0)))
    zeros = ops.broadcast(ops.constant(np.float32(0)), ops.concat([batch, ops.constant(np.array([hidden], np.int32))], 0))
    perm = ops.constant(np.array([1, 0, 2], np.int32))
    cell = "gru" if kind.startswith("gru") else "lstm"
    last = kind.endswith("_last")
    y = _keras2_loop(cell, ops.transpose(X, perm), zeros, inputs, hidden, 0, last)
    if kind == "bilstm_last":
        y_b = _keras2_loop(cell, ops.transpose(_reverse_v2(X), perm), zeros, inputs, hidden, 1, last)
        y = ops.concat([y, y_b], -1)
    return ov.Model([y if last else ops.transpose(y, perm)], [X])


def keras_layer(kind: str, steps: int, inputs: int, hidden: int) -> ov.Model:
    """Keras LSTM / GRU / bidirectional LSTM / two LSTM layers / LSTM behind a Masking layer (return_sequences) and
    LSTM / GRU / bidirectional LSTM returning their last output only (lstm_last, gru_last, bilstm_last) as the
    TensorFlow frontend converts them."""
    X = ops.parameter([-1, steps, inputs], np.float32, name="input_layer")
    batch = ops.gather(ops.shape_of(X, "i32"), ops.constant(np.array([0], np.int64)), ops.constant(np.int64(0)))
    zeros = ops.broadcast(ops.constant(np.float32(0)), ops.concat([batch, ops.constant(np.array([hidden], np.int32))], 0))
    perm = ops.constant(np.array([1, 0, 2], np.int64))
    cell = "gru" if kind.startswith("gru") else "lstm"
    if kind.endswith("_last"):
        y = ops.squeeze(_keras_loop(cell, ops.transpose(X, perm), zeros, steps, inputs, hidden, 0, last=True),
                        ops.constant(np.int64(0)))
        if kind == "bilstm_last":  # the backward layer's last output: its state after the reversed sequence
            y_b = _keras_loop(cell, ops.transpose(_reverse_v2(X), perm), zeros, steps, inputs, hidden, 1, last=True)
            y = ops.concat([y, ops.squeeze(y_b, ops.constant(np.int64(0)))], -1)
        return ov.Model([y], [X])
    if kind == "masking":  # a step whose features are all zero is masked
        keep = ops.reduce_logical_or(ops.not_equal(X, ops.constant(np.float32(0))), ops.constant(np.int64(-1)), True)
        x_tm = ops.transpose(ops.select(keep, X, ops.constant(np.float32(0))), perm)
        y = _keras_loop(cell, x_tm, zeros, steps, inputs, hidden, 0, mask_tm=ops.transpose(keep, perm))
        return ov.Model([ops.transpose(y, perm)], [X])
    y = _keras_loop(cell, ops.transpose(X, perm), zeros, steps, inputs, hidden, 0)
    if kind == "lstm2":  # a second layer reads the first's output sequence
        y = _keras_loop(cell, y.get_node(), zeros, steps, hidden, hidden, 2)
    if kind == "bilstm":  # the backward layer reads the reversed sequence and its output is reversed back
        y_b = _keras_loop(cell, ops.transpose(_reverse_v2(X), perm), zeros, steps, inputs, hidden, 1)
        dims = ops.gather(ops.shape_of(y_b), ops.constant(np.array([1, 0, 2], np.int64)), ops.constant(np.int64(0)))
        lens = ops.broadcast(*(ops.gather(dims, ops.constant(np.array([k], np.int64)), ops.constant(np.int64(0)))
                               for k in (1, 0)))
        y = ops.concat([y, ops.reverse_sequence(y_b, lens, 1, 0)], -1)
    return ov.Model([ops.transpose(y, perm)], [X])


def _reverse_v2(x: Any) -> Any:
    """TensorFlow's ReverseV2 of a [batch, time, features] tensor on its time axis, as OpenVINO's TensorFlow frontend
    writes it (tests/fixtures/tf_bidirectional_lstm): a ReverseSequence of an Unsqueeze, the lengths read from its
    permuted shape."""
    zero = ops.constant(np.array([0], np.int64))
    u = ops.unsqueeze(x, zero)
    dims = ops.gather(ops.shape_of(u), ops.constant(np.array([0, 2, 1, 3], np.int64)), ops.constant(np.int64(0)))
    lens = ops.gather(dims, ops.constant(np.array([1], np.int64)), ops.constant(np.int64(0)))
    return ops.squeeze(ops.reverse_sequence(u, lens, 0, 2), zero)


def torch_layer(kind: str, inputs: int, hidden: int, as_ti: bool = False, lengths_input: bool = False) -> ov.Model:
    """nn.LSTM / nn.GRU / nn.RNN (batch_first) as OpenVINO's PyTorch frontend converts them: an LSTMSequence /
    GRUSequence / RNNSequence on dynamic shapes, with zero initial states and the input's time axis, read at run time,
    as every batch row's length (`lengths_input`: the lengths are a second input instead). `as_ti`: rewritten by
    OpenVINO's ConvertSequenceToTensorIterator (a TensorIterator over the cell, masked by a step counter against
    the lengths), the form OpenVINO's own transformations leave."""
    rng = np.random.default_rng(0)
    g = {"lstm": 4, "gru": 3, "rnn": 1}[kind]
    X = ops.parameter([-1, -1, -1], np.float32, name="x")
    shape = ops.shape_of(X)
    batch = ops.gather(shape, ops.constant(np.array([0], np.int64)), ops.constant(np.int64(0)))
    zeros = ops.broadcast(ops.constant(np.float32(0)),
                          ops.concat([ops.constant(np.array([1], np.int64)), batch,
                                      ops.constant(np.array([hidden], np.int64))], 0))
    h0 = ops.reshape(zeros, ops.constant(np.array([-1, 1, hidden], np.int64)), False)
    steps = ops.gather(ops.convert(shape, np.int32), ops.constant(np.array([1], np.int64)), ops.constant(np.int64(0)))
    lens = ops.parameter([-1], np.int32, name="lengths") if lengths_input else \
        ops.broadcast(steps, ops.convert(batch, np.int32))
    w, r = ops.constant(_w(rng, 1, g * hidden, inputs)), ops.constant(_w(rng, 1, g * hidden, hidden))
    if kind == "lstm":
        seq = ops.lstm_sequence(X, h0, h0, lens, w, r, ops.constant(_w(rng, 1, 4 * hidden)), hidden, "forward")
    elif kind == "gru":
        seq = ops.gru_sequence(X, h0, lens, w, r, ops.constant(_w(rng, 1, 4 * hidden)), hidden, "forward",
                               linear_before_reset=True)
    else:
        seq = ops.rnn_sequence(X, h0, lens, w, r, ops.constant(_w(rng, 1, hidden)), hidden, "forward")
    model = ov.Model([ops.squeeze(seq.output(0), ops.constant(np.int64(1)))], [X, lens] if lengths_input else [X])
    if as_ti:
        from openvino._offline_transformations import convert_sequence_to_tensor_iterator_transformation
        convert_sequence_to_tensor_iterator_transformation(model)
    return model


def generic_loop(steps: int, batch: int, width: int) -> ov.Model:
    """A Loop whose body is no recurrent cell: s' = tanh(s W) * 0.5 + x_t."""
    rng = np.random.default_rng(0)
    X = ops.parameter([steps, batch, width], np.float32, name="X")
    S0 = ops.parameter([batch, width], np.float32, name="S0")
    bx = ops.parameter([1, batch, width], np.float32)
    bs = ops.parameter([batch, width], np.float32)
    s = ops.add(ops.multiply(ops.tanh(ops.matmul(bs, ops.constant(_w(rng, width, width)), False, False)),
                             ops.constant(np.float32(0.5))), ops.squeeze(bx, [0]))
    r_c, r_s = ops.result(ops.constant(True)), ops.result(s)
    r_y = ops.result(ops.unsqueeze(s, 0))
    loop = ops.loop(ops.constant(np.int64(steps)), ops.constant(True))
    loop.set_function(ov.Model([r_c, r_s, r_y], [bx, bs]))
    loop.set_special_body_ports([-1, 0])
    loop.set_sliced_input(bx, X.output(0), 0, 1, 1, -1, 0)
    loop.set_merged_input(bs, S0.output(0), r_s.output(0))
    return ov.Model([loop.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 0)], [X, S0])


def check_keras_form() -> None:
    """The rebuilt Keras loops have the same body ops as the TensorFlow frontend's (tests/fixtures/rnn_keras_*,
    tf_keras2_*)."""
    core = ov.Core()
    for build, kind, fixture in ((keras_layer, "lstm", "rnn_keras_lstm"), (keras_layer, "gru", "rnn_keras_gru"),
                                 (keras_layer, "masking", "tf_lstm_masking"), (keras_layer, "lstm_last", "tf_lstm_last"),
                                 (keras2_layer, "gru", "tf_keras2_gru_run_time_length"),
                                 (keras2_layer, "lstm_last", "tf_keras2_lstm_last_run_time_length")):
        path = FIXTURES / fixture / "model.xml"
        if not path.exists():
            continue
        ours, theirs = build(kind, 5, 4, 8), core.read_model(str(path))
        if _body_ops(ours) != _body_ops(theirs):
            raise SystemExit(f"the rebuilt Keras {kind} differs from the frontend's: {_body_ops(ours)} vs "
                             f"{_body_ops(theirs)}")


def check_torch_form() -> None:
    """The rebuilt PyTorch LSTM computes its lengths with the same ops as the PyTorch frontend's
    (tests/fixtures/torch_lstm)."""
    path = FIXTURES / "torch_lstm" / "model.xml"
    if path.exists():
        ours, theirs = _lens_ops(torch_layer("lstm", 4, 8)), _lens_ops(ov.Core().read_model(str(path)))
        if ours != theirs:
            raise SystemExit(f"the rebuilt PyTorch LSTM's lengths differ from the frontend's: {ours} vs {theirs}")


def _lens_ops(model: ov.Model) -> collections.Counter[str]:
    """The ops computing the LSTMSequence's sequence lengths, by type."""
    seq = next(op for op in model.get_ordered_ops() if op.get_type_name() == "LSTMSequence")
    count: collections.Counter[str] = collections.Counter()
    todo = [seq.input_value(3).get_node()]
    while todo:
        node = todo.pop()
        count[node.get_type_name()] += 1
        todo += [v.get_node() for v in node.input_values()]
    return count


def _body_ops(model: ov.Model) -> collections.Counter[str]:
    count: collections.Counter[str] = collections.Counter()
    for op in model.get_ordered_ops():
        if op.get_type_name() == "Loop":
            count.update(o.get_type_name() for o in op.get_function().get_ordered_ops()
                         if o.get_type_name() != "Constant")
    return count


def products_model(cell: str, batch: int, steps: int, inputs: int, hidden: int, directions: int) -> Any:
    """A recurrent layer's matrix products alone, as onnxruntime runs them: the input projection of all steps (a
    MatMul per direction, of x [batch, steps, inputs] transposed to time-major) and a Scan whose step is one Gemm per
    direction, h_t = (h_{t-1} R^T + x_t W^T)[:, :hidden] (the Slice keeps the state's size). An exact translation
    computes these products and the gate arithmetic besides, on the same kernels: where the products dominate (batch
    16 at these sizes) this model's time is a floor for any such model (`--floor`). At batch 1 the Scan's own cost
    per step dominates, and a fused LSTM/GRU node runs below it."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    gates = {"lstm": 4, "gru": 3, "rnn": 1}[cell]
    f32 = TensorProto.FLOAT
    nodes = [helper.make_node("Transpose", ["x"], ["x_tm"], perm=[1, 0, 2])]
    body_nodes, inits, body_in, body_out, states, scanned = [], [], [], [], [], []
    for d in range(directions):
        inits += [numpy_helper.from_array(_w(rng, inputs, gates * hidden), f"W{d}"),
                  numpy_helper.from_array(_w(rng, hidden, gates * hidden), f"R{d}"),
                  numpy_helper.from_array(np.zeros((batch, hidden), np.float32), f"h0_{d}")]
        nodes.append(helper.make_node("MatMul", ["x_tm", f"W{d}"], [f"xw{d}"]))
        body_nodes += [helper.make_node("Gemm", [f"h{d}", f"R{d}", f"x{d}"], [f"g{d}"]),
                       helper.make_node("Slice", [f"g{d}", "zero", "width", "one"], [f"h{d}_next"])]
        body_in.append(helper.make_tensor_value_info(f"h{d}", f32, [batch, hidden]))
        body_out.append(helper.make_tensor_value_info(f"h{d}_next", f32, [batch, hidden]))
        states.append(f"h0_{d}")
        scanned.append(f"xw{d}")
    body_in += [helper.make_tensor_value_info(f"x{d}", f32, [batch, gates * hidden]) for d in range(directions)]
    inits += [numpy_helper.from_array(np.array([v], np.int64), n) for n, v in (("zero", 0), ("width", hidden),
                                                                                ("one", 1))]
    body = helper.make_graph(body_nodes, "step", body_in, body_out)
    outs = [f"h{d}_last" for d in range(directions)]
    nodes.append(helper.make_node("Scan", states + scanned, outs, body=body, num_scan_inputs=directions))
    graph = helper.make_graph(nodes, "products", [helper.make_tensor_value_info("x", f32, [batch, steps, inputs])],
                              [helper.make_tensor_value_info(o, f32, [batch, hidden]) for o in outs], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
