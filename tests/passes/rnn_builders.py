"""OpenVINO models with a recurrent cell in a TensorIterator or Loop body: cell ops, and cells spelled out with
MatMul/Split/activations as TensorFlow and PyTorch exports write them (built with the Python API)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import openvino as ov
import openvino.opset1 as ops1
import openvino.opset13 as ops

GATES = {"lstm1": 4, "lstm4": 4, "gru": 3, "rnn": 1}


def _f32(rng: np.random.Generator, *shape: int, scale: float = 0.5) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def cell_op(kind: str, rng: np.random.Generator, inputs: int, hidden: int, clip: float,
             activations: Sequence[str] | None, lbr: bool) -> Callable[[Any, Any, Any], list[Any]]:
    """A function (x [B, I], h, c) -> [h', c'] using the IR cell op."""
    g = GATES[kind]
    w, r = ops.constant(_f32(rng, g * hidden, inputs)), ops.constant(_f32(rng, g * hidden, hidden))
    kw: dict[str, Any] = {"clip": clip}
    if activations is not None:
        kw["activations"] = list(activations)
    if kind in ("lstm1", "lstm4"):
        b = ops.constant(_f32(rng, 4 * hidden))
        fn = ops1.lstm_cell if kind == "lstm1" else ops.lstm_cell
        return lambda x, h, c: list(fn(x, h, c, w, r, b, hidden, **kw).outputs())
    if kind == "gru":
        b = ops.constant(_f32(rng, (4 if lbr else 3) * hidden))
        return lambda x, h, c: [ops.gru_cell(x, h, w, r, b, hidden, linear_before_reset=lbr, **kw).output(0)]
    b = ops.constant(_f32(rng, hidden))
    acts = list(activations or ["tanh"])
    return lambda x, h, c: [ops.rnn_cell(x, h, w, r, b, hidden, acts, [], [], clip).output(0)]


# ---- spelled-out cells: (x [B, I], h, c) -> [h', c']


def _mm(rng: np.random.Generator, a: Any, n_in: int, n_out: int) -> Any:
    return ops.matmul(a, ops.constant(_f32(rng, n_in, n_out)), False, False)


def _bias(rng: np.random.Generator, v: Any, n: int) -> Any:
    return ops.add(v, ops.constant(_f32(rng, 1, n)))


def spelled(form: str, rng: np.random.Generator, inputs: int, hidden: int) -> Callable[[Any, Any, Any], list[Any]]:
    H = hidden

    def keras_lstm(x: Any, h: Any, c: Any, *, gate_act: Any = None, peephole: bool = False,
                   extra: bool = False, acts: tuple[Any, Any, Any] = (ops.sigmoid, ops.tanh, ops.tanh)) -> list[Any]:
        """acts: ONNX's f (the i, f, o gates), g (the cell gate), h (the new cell state); gate_act: f's for the
        forget gate alone."""
        act_f, act_g, act_h = acts
        z = _bias(rng, ops.add(_mm(rng, x, inputs, 4 * H), _mm(rng, h, H, 4 * H)), 4 * H)
        i, f, g, o = ops.split(z, 1, 4).outputs()  # Keras gate order i, f, c, o
        if peephole:
            f = ops.add(f, ops.multiply(c, ops.constant(_f32(rng, 1, H))))
        c_new = ops.add(ops.multiply((gate_act or act_f)(f), c), ops.multiply(act_f(i), act_g(g)))
        h_new = ops.multiply(act_f(o), act_h(c_new))
        if extra:
            c_new = ops.multiply(c_new, ops.constant(np.float32(0.5)))
        return [h_new, c_new]

    def torch_lstm(x: Any, h: Any, c: Any) -> list[Any]:
        # x W_ih^T + b_ih + h W_hh^T + b_hh, gate order i, f, g, o, chunks by VariadicSplit
        z = ops.add(_bias(rng, _mm(rng, x, inputs, 4 * H), 4 * H), _bias(rng, _mm(rng, h, H, 4 * H), 4 * H))
        i, f, g, o = ops.variadic_split(z, -1, [H] * 4).outputs()
        c_new = ops.add(ops.multiply(c, ops.sigmoid(f)), ops.multiply(ops.tanh(g), ops.sigmoid(i)))
        return [ops.multiply(ops.tanh(c_new), ops.sigmoid(o)), c_new]

    def gru(x: Any, h: Any, c: Any, *, reset_after: bool, acts: tuple[Any, Any] = (ops.sigmoid, ops.tanh)) -> list[Any]:
        sigmoid, tanh = acts  # ONNX's f (the z, r gates) and g (the new gate)
        xz, xr, xn = ops.split(_bias(rng, _mm(rng, x, inputs, 3 * H), 3 * H), -1, 3).outputs()
        if reset_after:  # Keras reset_after / PyTorch: n = tanh(x Wn + bn + r * (h Rn + rbn)), recurrent part sliced
            hh = _bias(rng, _mm(rng, h, H, 3 * H), 3 * H)
            hz, hr, hn = (ops.slice(hh, np.array([0, k * H]), np.array([2**62, (k + 1) * H]), np.array([1, 1]))
                          for k in range(3))
            r = sigmoid(ops.add(xr, hr))
            n = tanh(ops.add(xn, ops.multiply(r, hn)))
        else:
            hz, hr = ops.split(_mm(rng, h, H, 2 * H), 1, 2).outputs()
            r = sigmoid(ops.add(xr, hr))
            n = tanh(ops.add(xn, _mm(rng, ops.multiply(r, h), H, H)))
        z = sigmoid(ops.add(xz, hz))
        one = ops.constant(np.float32(1))
        return [ops.add(ops.multiply(z, h), ops.multiply(ops.subtract(one, z), n))]

    def rnn(x: Any, h: Any, c: Any, act: Any = ops.tanh) -> list[Any]:
        return [act(_bias(rng, ops.add(_mm(rng, h, H, H), _mm(rng, x, inputs, H)), H))]

    def tf1_lstm(x: Any, h: Any, c: Any) -> list[Any]:
        # TensorFlow 1's LSTMCell: [x, h] @ W + b, gates i, j, f, o, forget_bias added to f
        z = _bias(rng, _mm(rng, ops.concat([x, h], 1), inputs + H, 4 * H), 4 * H)
        i, j, f, o = ops.split(z, 1, 4).outputs()
        f = ops.add(f, ops.constant(np.float32(1.0)))
        c_new = ops.add(ops.multiply(c, ops.sigmoid(f)), ops.multiply(ops.sigmoid(i), ops.tanh(j)))
        return [ops.multiply(ops.tanh(c_new), ops.sigmoid(o)), c_new]

    def tf1_gru(x: Any, h: Any, c: Any) -> list[Any]:
        # TensorFlow 1's GRUCell: r, u = sigmoid([x, h] @ Wg + bg), n = tanh([x, r * h] @ Wc + bc)
        r, u = ops.split(ops.sigmoid(_bias(rng, _mm(rng, ops.concat([x, h], 1), inputs + H, 2 * H), 2 * H)), 1,
                         2).outputs()
        n = ops.tanh(_bias(rng, _mm(rng, ops.concat([x, ops.multiply(r, h)], 1), inputs + H, H), H))
        one = ops.constant(np.float32(1))
        return [ops.add(ops.multiply(u, h), ops.multiply(ops.subtract(one, u), n))]

    def elu(v: Any) -> Any:
        return ops.elu(v, 0.7)

    def keras2_hard_sigmoid(clip: str) -> Callable[[Any], Any]:
        """Keras 2's hard_sigmoid, x * 0.2 + 0.5 clipped to [0, 1] by a Clamp, Maximum(Minimum(.)) or
        Minimum(Maximum(.)); "clamp6": clipped to [0, 6] instead, no activation of ONNX's recurrent ops."""
        def act(v: Any) -> Any:
            y = ops.add(ops.multiply(v, ops.constant(np.float32(0.2))), ops.constant(np.float32(0.5)))
            lo, hi = ops.constant(np.float32(0)), ops.constant(np.float32(1))
            return {"clamp": lambda: ops.clamp(y, 0.0, 1.0), "clamp6": lambda: ops.clamp(y, 0.0, 6.0), "max_min": lambda: ops.maximum(ops.minimum(y, hi), lo),
                    "min_max": lambda: ops.minimum(hi, ops.maximum(lo, y))}[clip]()
        return act

    forms: dict[str, Callable[..., list[Any]]] = {
        "keras_lstm": keras_lstm, "torch_lstm": torch_lstm, "spelled_rnn": rnn, "tf1_lstm": tf1_lstm,
        "tf1_gru": tf1_gru,
        "gru_after": lambda x, h, c: gru(x, h, c, reset_after=True),
        "gru_before": lambda x, h, c: gru(x, h, c, reset_after=False),
        # other activations (Keras's recurrent_activation="hard_sigmoid", activation="relu"...)
        "lstm_hard_sigmoid": lambda x, h, c: keras_lstm(x, h, c, acts=(ops.hsigmoid, ops.tanh, ops.tanh)),
        "lstm_relu": lambda x, h, c: keras_lstm(x, h, c, acts=(ops.sigmoid, ops.relu, ops.relu)),
        "lstm_three_acts": lambda x, h, c: keras_lstm(x, h, c, acts=(ops.hsigmoid, elu, ops.softsign)),
        "gru_hard_sigmoid_relu": lambda x, h, c: gru(x, h, c, reset_after=True, acts=(ops.hsigmoid, ops.relu)),
        "gru_before_elu": lambda x, h, c: gru(x, h, c, reset_after=False, acts=(ops.sigmoid, elu)),
        "lstm_keras2_hard_sigmoid": lambda x, h, c: keras_lstm(
            x, h, c, acts=(keras2_hard_sigmoid("clamp"), ops.tanh, ops.tanh)),
        "lstm_clamp6_gates": lambda x, h, c: keras_lstm(x, h, c, acts=(keras2_hard_sigmoid("clamp6"), ops.tanh, ops.tanh)),
        "gru_before_keras2_hard_sigmoid": lambda x, h, c: gru(
            x, h, c, reset_after=False, acts=(keras2_hard_sigmoid("max_min"), ops.tanh)),
        "gru_keras2_hard_sigmoid": lambda x, h, c: gru(
            x, h, c, reset_after=True, acts=(keras2_hard_sigmoid("min_max"), ops.tanh)),
        "rnn_elu": lambda x, h, c: rnn(x, h, c, act=elu),
        "rnn_softplus": lambda x, h, c: rnn(x, h, c, act=ops.softplus),
        "lstm_tanh_gate": lambda x, h, c: keras_lstm(x, h, c, gate_act=ops.tanh),
        "lstm_mixed_gates": lambda x, h, c: keras_lstm(x, h, c, gate_act=ops.hsigmoid),
        "lstm_peephole": lambda x, h, c: keras_lstm(x, h, c, peephole=True),
        "lstm_extra_state_op": lambda x, h, c: keras_lstm(x, h, c, extra=True),
    }
    return forms[form]


def is_lstm(kind: str) -> bool:
    return "lstm" in kind


def recurrent_loop(kind: str, *, batch: int = 2, steps: int = 5, inputs: int = 4, hidden: int = 3,
                   reverse: bool = False, outputs: Sequence[str] = ("seq", "h", "c"), loop: bool = False,
                   clip: float = 0.0, activations: Sequence[str] | None = None, lbr: bool = False,
                   trip: int | None = None, dynamic_steps: bool = False, time_major: bool = False,
                   squeeze_step: bool = False, pre: bool = False, post: bool = False, seed: int = 0,
                   starts_below: int | None = None, weights_outside: bool = False) -> ov.Model:
    """X [batch, steps, inputs] (time_major: [steps, batch, inputs]) sliced on its time axis (reverse: from the end) through a TensorIterator (or a Loop) whose
    body runs one cell step. `kind`: an IR cell (lstm1, lstm4, gru, rnn) or a spelled-out form (see `spelled`).
    Outputs: "seq" the per-step h concatenated on axis 1, "h"/"c" the last h and c. `trip` (Loop): the trip count,
    default `steps`; -1 reads it from X's shape at run time. `squeeze_step`: the step's slice enters the cell through
    a Squeeze of its time axis instead of a Reshape. `pre`: the step's slice goes through a projection and a Relu
    (per-step work on the input only) before the cell. `post`: "seq" is tanh(h @ W_o + b_o) of the new h (per-step
    work for the output only) instead of h. `starts_below` (Loop): the initial condition is computed,
    starts_below < the sequence's length, as TensorFlow's loops over a run-time length start only if 0 < length.
    `weights_outside`: the body's float constants (weights, biases) are body Parameters fed by invariant inputs from
    constants outside the loop, as OpenVINO's ONNX frontend makes a Scan's or Loop's outer-scope initializers."""
    rng = np.random.default_rng(seed)
    step = cell_op(kind, rng, inputs, hidden, clip, activations, lbr) if kind in GATES else \
        spelled(kind, rng, inputs, hidden)
    has_c = is_lstm(kind)
    t = -1 if dynamic_steps else steps
    axis = 0 if time_major else 1  # the sliced (time) axis
    X = ops.parameter([t, batch, inputs] if time_major else [batch, t, inputs], np.float32, name="X")
    H0 = ops.parameter([batch, hidden], np.float32, name="H0")
    params = [X, H0]
    bx = ops.parameter([1, batch, inputs] if time_major else [batch, 1, inputs], np.float32, name="x_t")
    bh = ops.parameter([batch, hidden], np.float32, name="h_prev")
    body_params = [bx, bh]
    bc = None
    if has_c:
        C0 = ops.parameter([batch, hidden], np.float32, name="C0")
        params.append(C0)
        bc = ops.parameter([batch, hidden], np.float32, name="c_prev")
        body_params.append(bc)
    x = ops.squeeze(bx, ops.constant(np.array([axis], np.int64))) if squeeze_step else \
        ops.reshape(bx, ops.constant(np.array([-1, inputs], np.int64)), False)
    if pre:
        x = ops.relu(_bias(rng, _mm(rng, x, inputs, inputs), inputs))
    new = step(x, bh, bc)
    r_h = ops.result(new[0])
    y = ops.tanh(_bias(rng, _mm(rng, new[0], hidden, 2), 2)) if post else new[0]
    r_y = ops.result(ops.unsqueeze(y, ops.constant(np.array([axis], np.int64))))
    results = [r_h, r_y]
    r_c = None
    if has_c:
        r_c = ops.result(new[1])
        results.append(r_c)
    if loop:
        r_cond = ops.result(ops.constant(True))
        it = ops.parameter([], np.int64, name="it")
        body = ov.Model([r_cond, *results], [it, *body_params])
        invariant = _lift_constants(body) if weights_outside else []
        if trip == -1:  # the trip count read from the sequence's length at run time
            count = ops.gather(ops.shape_of(X), ops.constant(np.int64(axis)), ops.constant(np.int64(0)))
        else:
            count = ops.constant(np.int64(steps if trip is None else trip))
        start = ops.constant(True) if starts_below is None else ops.less(
            ops.constant(np.int64(starts_below)),
            ops.gather(ops.shape_of(X), ops.constant(np.int64(axis)), ops.constant(np.int64(0))))
        node = ops.loop(count, start)
        node.set_function(body)
        node.set_special_body_ports([0, 0])
    else:
        body = ov.Model(results, body_params)
        invariant = _lift_constants(body) if weights_outside else []
        node = ops.tensor_iterator()
        node.set_body(body)
    start, stride, end = (-1, -1, 0) if reverse else (0, 1, -1)
    node.set_sliced_input(bx, X.output(0), start, stride, 1, end, axis)
    node.set_merged_input(bh, H0.output(0), r_h.output(0))
    if has_c:
        node.set_merged_input(bc, params[2].output(0), r_c.output(0))  # type: ignore[union-attr]
    for param, value in invariant:
        node.set_invariant_input(param, ops.constant(value).output(0))
    outs = []
    for o in outputs:
        if o == "seq":
            # a Loop concatenates forward only: reverse reading then gives the steps in reading order
            o_start, o_stride, o_end = (0, 1, -1) if loop else (start, stride, end)
            outs.append(node.get_concatenated_slices(r_y.output(0), o_start, o_stride, 1, o_end, axis))
        elif o == "h":
            outs.append(node.get_iter_value(r_h.output(0), -1))
        elif o == "c" and r_c is not None:
            outs.append(node.get_iter_value(r_c.output(0), -1))
    return ov.Model(outs, params)


def _lift_constants(body: ov.Model) -> list[tuple[Any, np.ndarray]]:
    """Replace `body`'s float constants of rank >= 1 by new body Parameters: pairs (parameter, constant's value)."""
    lifted = []
    for op in body.get_ordered_ops():
        if op.get_type_name() == "Constant" and op.get_element_type() == ov.Type.f32 and op.get_output_shape(0):
            param = ops.parameter(op.get_output_partial_shape(0), np.float32)
            lifted.append((param, op.get_data().copy()))
            op.output(0).replace(param.output(0))
    body.add_parameters([p for p, _ in lifted])
    return lifted


def openvino_sequence_ti(kind: str, direction: str = "forward", lengths: str | Sequence[int] = "input", *,
                         shape: tuple[int, int] | None = None, inputs: int = 4, hidden: int = 3,
                         seed: int = 0) -> ov.Model:
    """An LSTM/GRU/RNN sequence rewritten by OpenVINO's own ConvertSequenceToTensorIterator transformation: a
    TensorIterator over the cell whose body masks each row by a step counter against its length (Greater/Equal/Select,
    states zeroed past the length, the final states held at each row's last step). `lengths`: "input" (a model
    input), "full" (the time dimension read from the shape, as OpenVINO's PyTorch frontend passes them) or constant
    values. `shape`: static (batch, steps); default run-time."""
    from openvino._offline_transformations import convert_sequence_to_tensor_iterator_transformation

    rng = np.random.default_rng(seed)
    g = {"lstm": 4, "gru": 3, "rnn": 1}[kind]
    batch, steps = shape or (-1, -1)
    x = ops.parameter([batch, steps, inputs], np.float32, name="x")
    h0 = ops.parameter([batch, 1, hidden], np.float32, name="h0")
    params = [x, h0]
    if not isinstance(lengths, str):
        lens = ops.constant(np.array(lengths, np.int32))
    elif lengths == "full":
        dims = ops.shape_of(x)
        time = ops.gather(dims, ops.constant(np.array([1])), ops.constant(np.array(0)))
        rows = ops.gather(dims, ops.constant(np.array([0])), ops.constant(np.array(0)))
        lens = ops.broadcast(ops.convert(time, "i32"), rows)
    else:
        lens = ops.parameter([batch], np.int32, name="lens")
        params.append(lens)
    w, r = (ops.constant(_f32(rng, 1, g * hidden, n)) for n in (inputs, hidden))
    b = ops.constant(_f32(rng, 1, g * hidden))
    if kind == "lstm":
        c0 = ops.parameter([batch, 1, hidden], np.float32, name="c0")
        params.append(c0)
        seq = ops.lstm_sequence(x, h0, c0, lens, w, r, b, hidden, direction)
    elif kind == "gru":
        seq = ops.gru_sequence(x, h0, lens, w, r, b, hidden, direction)
    else:
        seq = ops.rnn_sequence(x, h0, lens, w, r, b, hidden, direction)
    model = ov.Model(list(seq.outputs()), params)
    convert_sequence_to_tensor_iterator_transformation(model)
    assert any(op.get_type_name() == "TensorIterator" for op in model.get_ops())
    return model


def masked_ti_lstm(variant: str = "openvino", *, inputs: int = 4, hidden: int = 3, seed: int = 0) -> ov.Model:
    """The body of `openvino_sequence_ti("lstm")` written by hand (x [batch, steps, inputs], h0, c0 [batch, hidden],
    lens [batch]; outputs: the masked per-step h, and h and c held at each row's last step), and near misses that
    must stay loops: "zeroed_state_read" also returns the carried h, zeroed past each row's length (not the node's
    Y_h); "unmasked_output" stacks the cell's h at every step (it goes on past a row's length); "held_a_step_late"
    holds the values of step `length` instead of `length - 1`."""
    rng = np.random.default_rng(seed)
    X = ops.parameter([-1, -1, inputs], np.float32, name="x")
    H0 = ops.parameter([-1, hidden], np.float32, name="h0")
    C0 = ops.parameter([-1, hidden], np.float32, name="c0")
    L = ops.parameter([-1], np.int32, name="lens")
    bx = ops.parameter([-1, 1, inputs], np.float32, name="x_t")
    bh, bc, bhl, bcl = (ops.parameter([-1, hidden], np.float32, name=n) for n in ("h", "c", "h_held", "c_held"))
    bl = ops.parameter([-1], np.int32, name="lens_in")
    bk = ops.parameter([1], np.int32, name="counter")
    cell = ops.lstm_cell(ops.squeeze(bx, ops.constant(np.array([1]))), bh, bc, ops.constant(_f32(rng, 4 * hidden, inputs)),
                         ops.constant(_f32(rng, 4 * hidden, hidden)), ops.constant(_f32(rng, 4 * hidden)), hidden)
    h, c = cell.output(0), cell.output(1)
    row_lens = ops.broadcast(bl, ops.shape_of(h), ops.constant(np.array([0])), "explicit")
    past = ops.greater(bk, row_lens)
    at = ops.equal(ops.add(bk, ops.constant(np.array([1], np.int32))) if variant == "held_a_step_late" else bk, row_lens)
    zeros = ops.broadcast(ops.constant(np.float32(0)), ops.shape_of(h))
    h_next, c_next = ops.select(past, zeros, h), ops.select(past, zeros, c)
    r_h, r_c = ops.result(h_next), ops.result(c_next)
    r_hl, r_cl = ops.result(ops.select(at, h, bhl)), ops.result(ops.select(at, c, bcl))
    r_k = ops.result(ops.add(bk, ops.constant(np.array([1], np.int32))))
    r_y = ops.result(ops.unsqueeze(h if variant == "unmasked_output" else h_next, ops.constant(np.array([1]))))
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([r_h, r_c, r_hl, r_cl, r_k, r_y], [bx, bh, bc, bhl, bcl, bl, bk]))
    ti.set_sliced_input(bx, X.output(0), 0, 1, 1, -1, 1)
    ti.set_merged_input(bh, H0.output(0), r_h.output(0))
    ti.set_merged_input(bc, C0.output(0), r_c.output(0))
    zero_state = ops.broadcast(ops.constant(np.float32(0)), ops.shape_of(H0))
    ti.set_merged_input(bhl, zero_state.output(0), r_hl.output(0))
    ti.set_merged_input(bcl, zero_state.output(0), r_cl.output(0))
    ti.set_invariant_input(bl, L.output(0))
    ti.set_merged_input(bk, ops.constant(np.array([1], np.int32)).output(0), r_k.output(0))
    outputs = [ti.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 1), ti.get_iter_value(r_hl.output(0), -1),
               ti.get_iter_value(r_cl.output(0), -1)]
    if variant == "zeroed_state_read":
        outputs.append(ti.get_iter_value(r_h.output(0), -1))
    return ov.Model(outputs, [X, H0, C0, L])
