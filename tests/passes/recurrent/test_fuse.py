"""Recurrent fusion: loops over one cell become one ONNX LSTM/GRU/RNN with OpenVINO's numbers; near misses stay loops."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnx_ir as oir
import openvino as ov
import openvino.opset13 as ops
import pytest

import ir2onnx
from ir2onnx.passes.analysis.graph import NoMatch
from ir2onnx.passes.recurrent.cells import _Reader
from ir2onnx.verify.onnxruntime_run import run_onnxruntime
from tests.fixture_paths import FIXTURES
from tests.passes.rnn_builders import is_lstm, masked_ti_lstm, openvino_sequence_ti, recurrent_loop, spelled
from tests.translate.control_flow.builders import ti_lstm
from tests.utils import (
    all_nodes,
    assert_equivalent,
    assert_outputs,
    count_loops,
    count_ops,
    gru_dispatches,
    rng_inputs,
    save_ir,
)

RECURRENT = ("LSTM", "GRU", "RNN")


def _inputs(kind: str, batch: int = 2, steps: int = 5, inputs: int = 4, hidden: int = 3, seed: int = 0) -> list[np.ndarray]:
    shapes = [((batch, steps, inputs), np.float32), ((batch, hidden), np.float32)]
    if is_lstm(kind):
        shapes.append(((batch, hidden), np.float32))
    return rng_inputs(shapes, seed)


def assert_lowered_rnn(proto: onnx.ModelProto) -> None:
    """The default passes turn an RNN node into one Scan over MatMul + Add (+ Clip) + activation (passes/rnn_scan.py),
    the input projection done before it (beside it, a GRU on a run-time batch may be an If on it: gru_scan.py)."""
    assert count_ops(proto, "RNN") == 0
    scans = [n for n in proto.graph.node if n.op_type == "Scan"]
    assert len(scans) == 1 and count_loops(proto) == 1 + gru_dispatches(proto)
    body = [n.op_type for n in scans[0].attribute[0].g.node]
    assert body[:2] == ["MatMul", "Add"] and len(body) in (4, 5), body


def _check(model: Any, tmp_path: Path, inputs: list[np.ndarray], op: str | None) -> None:
    """Fusion alone: one `op` (None: the loop stays); default passes and fuse=False: all three match OpenVINO."""
    xml = save_ir(model, tmp_path)
    fused = assert_equivalent(xml, inputs, optimize=False)
    default = assert_equivalent(xml, inputs)
    literal = assert_equivalent(xml, inputs, fuse=False)
    assert count_loops(literal) == 1
    if op is None:
        assert count_loops(fused) == 1 and count_loops(default) == 1, "a near miss was fused"
        return
    assert count_loops(fused) == 0, "the loop was not fused"
    assert count_ops(fused, op) == 1 and sum(count_ops(fused, o) for o in RECURRENT) == 1
    if op == "RNN":
        assert_lowered_rnn(default)
    else:
        assert count_loops(default) == 0 and count_ops(default, op) == 1


CELLS = [("lstm4", "LSTM", {}), ("lstm1", "LSTM", {}), ("gru", "GRU", {}), ("gru", "GRU", {"lbr": True}),
         ("rnn", "RNN", {})]


@pytest.mark.parametrize("loop", [False, True], ids=["ti", "loop"])
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("kind,op,kw", CELLS, ids=["lstm4", "lstm1", "gru", "gru_lbr", "rnn"])
def test_cell_ops_fused(tmp_path: Path, kind: str, op: str, kw: dict[str, Any], reverse: bool, loop: bool) -> None:
    model = recurrent_loop(kind, reverse=reverse, loop=loop, **kw)
    _check(model, tmp_path, _inputs(kind), op)


@pytest.mark.parametrize("loop", [False, True], ids=["ti", "loop"])
@pytest.mark.parametrize("kind,op,kw", [*CELLS, ("keras_lstm", "LSTM", {}), ("torch_lstm", "LSTM", {}),
                                        ("gru_after", "GRU", {})],
                         ids=["lstm4", "lstm1", "gru", "gru_lbr", "rnn", "keras_lstm", "torch_lstm", "gru_after"])
def test_weights_from_outside_the_loop(tmp_path: Path, kind: str, op: str, kw: dict[str, Any], loop: bool) -> None:
    """The cell's weights and biases are body Parameters fed by invariant inputs (constants outside the loop), as
    OpenVINO's ONNX frontend makes a Scan's or Loop's outer-scope initializers: fused as when they are in the body."""
    model = recurrent_loop(kind, loop=loop, reverse=not loop, weights_outside=True, **kw)
    node = next(o for o in model.get_ordered_ops() if o.get_type_name() in ("TensorIterator", "Loop"))
    invariant = [d for d in node.get_input_descriptions() if type(d).__name__ == "InvariantInputDescription"]
    assert len(invariant) >= 2 and not any(o.get_type_name() == "Constant" and o.get_element_type() == ov.Type.f32
                                           and o.get_output_shape(0) for o in node.get_function().get_ops())
    _check(model, tmp_path, _inputs(kind), op)


@pytest.mark.parametrize("work", ["pre", "post", "both"])
@pytest.mark.parametrize("loop", [False, True], ids=["ti", "loop"])
@pytest.mark.parametrize("kind,op,kw", CELLS, ids=["lstm4", "lstm1", "gru", "gru_lbr", "rnn"])
def test_cell_with_per_step_work_around_it(tmp_path: Path, kind: str, op: str, kw: dict[str, Any], loop: bool,
                                           work: str) -> None:
    """A body that projects its slice (MatMul + Add + Relu) before the cell, or computes its per-step output as
    tanh(h @ W_o + b_o) after it: fused by the default passes, once that work has moved out of the loop (one MatMul
    over the whole sequence before the fused node, one over its output after it); fusion alone (optimize=False) and
    fuse=False keep the loop."""
    xml = save_ir(recurrent_loop(kind, pre=work != "post", post=work != "pre", loop=loop, reverse=loop, **kw),
                  tmp_path)
    inputs = _inputs(kind)
    default = assert_equivalent(xml, inputs)
    assert count_loops(assert_equivalent(xml, inputs, optimize=False)) == 1
    assert count_loops(assert_equivalent(xml, inputs, fuse=False)) == 1
    if op == "RNN":
        assert_lowered_rnn(default)
    else:
        assert count_loops(default) == 0 and count_ops(default, op) == 1
        assert count_ops(default, "MatMul") == (2 if work == "both" else 1)


@pytest.mark.parametrize("outputs", [("seq",), ("h",), ("c",), ("h", "seq"), ("seq", "c", "h")])
@pytest.mark.parametrize("batch", [1, 3])
def test_output_forms_and_batch(tmp_path: Path, outputs: tuple[str, ...], batch: int) -> None:
    model = recurrent_loop("lstm4", batch=batch, outputs=outputs, reverse=batch == 3)
    _check(model, tmp_path, _inputs("lstm4", batch=batch), "LSTM")


@pytest.mark.parametrize("kind,op,kw", [
    ("lstm4", "LSTM", {"clip": 0.7}),
    ("lstm4", "LSTM", {"activations": ["relu", "tanh", "sigmoid"]}),
    ("gru", "GRU", {"clip": 0.5, "activations": ["tanh", "relu"]}),
    ("gru", "GRU", {"lbr": True, "activations": ["relu", "sigmoid"]}),
    ("rnn", "RNN", {"clip": 0.3, "activations": ["relu"]}),
    ("rnn", "RNN", {"activations": ["sigmoid"]}),
])
def test_clip_and_activations_carried(tmp_path: Path, kind: str, op: str, kw: dict[str, Any]) -> None:
    _check(recurrent_loop(kind, **kw), tmp_path, _inputs(kind), op)


@pytest.mark.parametrize("loop", [False, True], ids=["ti", "loop"])
@pytest.mark.parametrize("kind,op", [("lstm4", "LSTM"), ("gru_after", "GRU")])
def test_time_major_sequence(tmp_path: Path, kind: str, op: str, loop: bool) -> None:
    model = recurrent_loop(kind, time_major=True, loop=loop, reverse=True)
    inputs = _inputs(kind)
    inputs[0] = np.ascontiguousarray(inputs[0].transpose(1, 0, 2))
    _check(model, tmp_path, inputs, op)


def test_long_sequence_and_wide_cell(tmp_path: Path) -> None:
    model = recurrent_loop("lstm4", batch=4, steps=40, inputs=24, hidden=16)
    _check(model, tmp_path, _inputs("lstm4", batch=4, steps=40, inputs=24, hidden=16), "LSTM")


SPELLED = [("keras_lstm", "LSTM"), ("torch_lstm", "LSTM"), ("gru_after", "GRU"), ("gru_before", "GRU"),
           ("spelled_rnn", "RNN"), ("tf1_lstm", "LSTM"), ("tf1_gru", "GRU")]


@pytest.mark.parametrize("loop", [False, True], ids=["ti", "loop"])
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("kind,op", SPELLED, ids=[k for k, _ in SPELLED])
def test_spelled_out_cells_fused(tmp_path: Path, kind: str, op: str, reverse: bool, loop: bool) -> None:
    _check(recurrent_loop(kind, reverse=reverse, loop=loop), tmp_path, _inputs(kind), op)


@pytest.mark.parametrize("loop", [False, True], ids=["ti", "loop"])
@pytest.mark.parametrize("kind,op", SPELLED, ids=[k for k, _ in SPELLED])
def test_spelled_out_cells_with_output_work_fused(tmp_path: Path, kind: str, op: str, loop: bool) -> None:
    """A spelled-out cell (its input projection in the body) whose per-step output is tanh(h @ W_o + b_o): the output
    work moves out first, so that the cell still matches with its projection."""
    xml = save_ir(recurrent_loop(kind, post=True, loop=loop), tmp_path)
    default = assert_equivalent(xml, _inputs(kind))
    if op == "RNN":
        assert_lowered_rnn(default)
    else:
        assert count_loops(default) == 0 and count_ops(default, op) == 1


OTHER_ACTIVATIONS = {  # form: (node, its activations, activation_alpha, activation_beta)
    "lstm_hard_sigmoid": ("LSTM", ["HardSigmoid", "Tanh", "Tanh"], [1 / 6], [0.5]),
    "lstm_relu": ("LSTM", ["Sigmoid", "Relu", "Relu"], [], []),
    "lstm_three_acts": ("LSTM", ["HardSigmoid", "Elu", "Softsign"], [1 / 6, 0.7], [0.5]),
    "gru_hard_sigmoid_relu": ("GRU", ["HardSigmoid", "Relu"], [1 / 6], [0.5]),
    "gru_before_elu": ("GRU", ["Sigmoid", "Elu"], [0.7], []),  # Elu's alpha is the list's first: one per parameter
    # Keras 2's hard_sigmoid spelled out: clip(x * 0.2 + 0.5, 0, 1) (fuse_rnn_cells._hard_sigmoid)
    "lstm_keras2_hard_sigmoid": ("LSTM", ["HardSigmoid", "Tanh", "Tanh"], [0.2], [0.5]),
    "gru_before_keras2_hard_sigmoid": ("GRU", ["HardSigmoid", "Tanh"], [0.2], [0.5]),
    "gru_keras2_hard_sigmoid": ("GRU", ["HardSigmoid", "Tanh"], [0.2], [0.5]),
    "rnn_elu": ("RNN", ["Elu"], [0.7], []),
    "rnn_softplus": ("RNN", ["Softplus"], [], []),
}


@pytest.mark.parametrize("loop", [False, True], ids=["ti", "loop"])
@pytest.mark.parametrize("kind", sorted(OTHER_ACTIVATIONS))
def test_spelled_out_cells_with_other_activations(tmp_path: Path, kind: str, loop: bool) -> None:
    """Cells whose gates use other activations ONNX's recurrent ops take (Keras's recurrent_activation="hard_sigmoid",
    activation="relu"...): fused with them as the node's activations, their parameters in activation_alpha/beta."""
    op, acts, alpha, beta = OTHER_ACTIVATIONS[kind]
    xml = save_ir(recurrent_loop(kind, loop=loop), tmp_path)
    fused = assert_equivalent(xml, _inputs(kind), optimize=False)
    assert_equivalent(xml, _inputs(kind))
    assert count_loops(fused) == 0 and count_ops(fused, op) == 1, "the loop was not fused"
    node = next(n for n in fused.graph.node if n.op_type == op)
    got = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    assert [a.decode() for a in got["activations"]] == acts
    np.testing.assert_allclose(got.get("activation_alpha", []), alpha, rtol=1e-6)
    np.testing.assert_allclose(got.get("activation_beta", []), beta, rtol=1e-6)


@pytest.mark.parametrize("kind", ["lstm_tanh_gate", "lstm_mixed_gates", "lstm_peephole", "lstm_extra_state_op",
                                  "lstm_clamp6_gates"])
@pytest.mark.parametrize("loop", [False, True], ids=["ti", "loop"])
def test_near_misses_staycount_loops(tmp_path: Path, kind: str, loop: bool) -> None:
    _check(recurrent_loop(kind, loop=loop), tmp_path, _inputs(kind), None)


@pytest.mark.parametrize("invariant", ["c", "h"])
def test_invariant_cell_state_is_not_carried(tmp_path: Path, invariant: str) -> None:
    """A TensorIterator over LSTMCell with one state Parameter an invariant input (no back edge: C0 or H0 at every
    step) is no LSTM: it stays a loop, and its numbers are numpy's for that reading. OpenVINO 2026.4's CPU plugin
    carries that state anyway (its result equals the recurrence with both states carried), so the comparison here is
    with numpy."""
    rng = np.random.default_rng(5)
    b, t, i, h = 2, 5, 4, 3
    w, r, bias = (rng.standard_normal(s).astype(np.float32) * 0.5 for s in ((4 * h, i), (4 * h, h), (4 * h,)))
    X, H0, C0 = (ops.parameter(s, np.float32, name=n) for s, n in (([b, t, i], "X"), ([b, h], "H0"), ([b, h], "C0")))
    xs, hs, cs = ops.parameter([b, 1, i], np.float32), ops.parameter([b, h], np.float32), ops.parameter([b, h], np.float32)
    cell = ops.lstm_cell(ops.squeeze(xs, ops.constant(np.array([1], np.int64))), hs, cs, ops.constant(w),
                         ops.constant(r), ops.constant(bias), h)
    r_h, r_c = ops.result(cell.output(0)), ops.result(cell.output(1))
    r_y = ops.result(ops.unsqueeze(cell.output(0), ops.constant(np.array([1], np.int64))))
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([r_h, r_c, r_y], [xs, hs, cs]))
    ti.set_sliced_input(xs, X.output(0), 0, 1, 1, -1, 1)
    for state, outer, result, name in ((hs, H0, r_h, "h"), (cs, C0, r_c, "c")):
        if name == invariant:
            ti.set_invariant_input(state, outer.output(0))
        else:
            ti.set_merged_input(state, outer.output(0), result.output(0))
    xml = save_ir(ov.Model([ti.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 1)], [X, H0, C0]), tmp_path)
    inputs = rng_inputs([((b, t, i), np.float32), ((b, h), np.float32), ((b, h), np.float32)], seed=6)

    def sigmoid(v: np.ndarray) -> np.ndarray:
        return 1 / (1 + np.exp(-v))

    hidden, cell_state, ys = inputs[1].astype(np.float64), inputs[2].astype(np.float64), []
    for step in range(t):  # OpenVINO's gate order f, i, c, o
        f, g_in, g_c, o = np.split(inputs[0][:, step] @ w.T + hidden @ r.T + bias, 4, axis=1)
        c_new = sigmoid(f) * cell_state + sigmoid(g_in) * np.tanh(g_c)
        h_new = sigmoid(o) * np.tanh(c_new)
        hidden = hidden if invariant == "h" else h_new
        cell_state = cell_state if invariant == "c" else c_new
        ys.append(h_new)
    expected = np.stack(ys, 1).astype(np.float32)
    for fuse in (True, False):
        proto = assert_outputs(xml, inputs, [expected], proto=ir2onnx.convert(xml, fuse=fuse))
        assert count_loops(proto) == 1 and count_ops(proto, "LSTM") == 1  # the one-step LSTM inside the loop


@pytest.mark.parametrize("outputs", [("h", "c"), ("seq", "h")])
def test_run_time_length(tmp_path: Path, outputs: tuple[str, ...]) -> None:
    """A sequence of run-time length; with zero steps the states stay the initial ones (ONNX Scan semantics; not
    OpenVINO's, whose states are then undefined memory; the literal Scan behind its guard: test_empty_inputs.py)."""
    xml = save_ir(recurrent_loop("lstm4", dynamic_steps=True, outputs=outputs), tmp_path)
    fused = assert_equivalent(xml, _inputs("lstm4", steps=7))
    assert count_loops(fused) == 0
    empty = _inputs("lstm4", steps=0)
    got = dict(zip(outputs, run_onnxruntime(fused, dict(zip([i.name for i in fused.graph.input], empty)))))
    if "seq" in outputs:
        assert got["seq"].shape == (2, 0, 3)
    np.testing.assert_array_equal(got["h"], empty[1])
    if "c" in outputs:
        np.testing.assert_array_equal(got["c"], empty[2])


@pytest.mark.parametrize("kind,op", [("lstm4", "LSTM"), ("keras_lstm", "LSTM")])
def test_loop_trip_count_from_the_sequence_length(tmp_path: Path, kind: str, op: str) -> None:
    xml = save_ir(recurrent_loop(kind, loop=True, trip=-1, dynamic_steps=True), tmp_path)
    fused = assert_equivalent(xml, _inputs(kind, steps=6))
    literal = assert_equivalent(xml, _inputs(kind, steps=6), fuse=False)
    assert count_loops(fused) == 0 and count_ops(fused, op) == 1 and count_loops(literal) == 1


def test_loop_shorter_than_the_sequence_stays_a_loop(tmp_path: Path) -> None:
    # four iterations over five steps: the fused node would read all five
    _check(recurrent_loop("lstm4", loop=True, trip=4, outputs=("h", "c")), tmp_path, _inputs("lstm4"), None)


@pytest.mark.parametrize("name,op", [("rnn_keras_lstm", "LSTM"), ("rnn_keras_gru", "GRU"),
                                     ("rnn_keras_gru_reset_before", "GRU"), ("rnn_keras_simple_rnn", "RNN")])
@pytest.mark.parametrize("batch", [1, 3])
def test_tensorflow_keras_layers(name: str, op: str, batch: int) -> None:
    """Keras layers converted by OpenVINO's TensorFlow frontend: a Loop with counters, a Gather per step and a
    TensorList buffer written by ScatterND (scripts/fixtures/make_rnn_fixtures.py)."""
    xml = FIXTURES / name / "model.xml"
    x = rng_inputs([((batch, 5, 4), np.float32)], seed=batch)
    fused = assert_equivalent(xml, x, optimize=False)
    literal = assert_equivalent(xml, x, fuse=False)
    assert count_loops(literal) == 1 and count_loops(fused) == 0
    assert count_ops(fused, op) == 1
    default = assert_equivalent(xml, x)
    if op == "RNN":
        assert_lowered_rnn(default)


@pytest.mark.parametrize("batch", [1, 2])
def test_shared_ti_lstm_builder(tmp_path: Path, batch: int) -> None:
    """The control-flow tests' TI over LSTMCell-4 (Reshape glue, three outputs) is fused."""
    model = ti_lstm(batch, 6, 5, 4)
    inputs = rng_inputs([((batch, 6, 5), np.float32), ((batch, 4), np.float32), ((batch, 4), np.float32)])
    _check(model, tmp_path, inputs, "LSTM")


def test_f16_network_stays_a_loop(tmp_path: Path) -> None:
    # the f16 state is rounded at every step (the cell computes in f32 between casts): one f32 LSTM would not round
    model = ti_lstm(2, 4, 3, 2, dtype=np.float16)
    inputs = rng_inputs([((2, 4, 3), np.float16), ((2, 2), np.float16), ((2, 2), np.float16)])
    xml = save_ir(model, tmp_path)
    proto = assert_equivalent(xml, inputs, rtol=1e-2, atol=1e-2)
    assert count_loops(proto) == 1


# Framework fixtures (scripts/fixtures/make_tf_fixtures.py): the number of fused nodes each becomes
FRAMEWORK = {"tf_lstm_seq": 1, "tf_lstm_last": 1, "tf_lstm_backwards": 1, "tf_gru_reset_after": 1,
             "tf_gru_reset_before": 1, "tf_simple_rnn": 1, "tf_bidirectional_lstm": 2,
             "tf_bidirectional_gru_last": 2, "tf_lstm_two_layers": 2, "tf_lstm_hard_sigmoid": 1, "tf_gru_relu": 1,
             "tf_rnn_lstm_cell": 1, "tf_lstm_run_time_length": 1, "tf_gru_last_run_time_length": 1,
             "tf_v1_lstm_cell": 1, "tf_v1_basic_lstm_cell": 1, "tf_v1_gru_cell": 1, "tf_v1_basic_rnn_cell": 1,
             "tf_v1_multi_rnn_cell": 2, "tf_stacked_rnn_cells": 3, "tf_v1_bidirectional_lstm_cell": 2,
             "tf_v1_lstm_cell_sequence_length": 1, "tf_v1_gru_cell_sequence_length": 1,
             "tf_lite_lstm_seq": 1, "tf_lite_gru_seq": 1, "tf_lite_bidirectional_lstm": 2, "tf_lite_simple_rnn": 1,
             "tf_lite_lstm_seq_batch1": 1, "tf_lite_gru_last_batch1": 1,
             "tf_lstm_states": 1, "tf_gru_no_bias": 1, "tf_lstm_relu_no_bias": 1, "tf_bidirectional_lstm_sum": 2,
             "tf_bidirectional_gru_unmerged": 2, "tf_lstm_seq2seq": 2,
             "tf_keras2_lstm_last_run_time_length": 1, "tf_keras2_gru_run_time_length": 1,
             "tf_keras2_gru_reset_before": 1, "tf_keras2_lstm_hard_sigmoid": 1, "tf_keras2_gru_hard_sigmoid": 1,
             "tf_dense_bidirectional_lstm_run_time_length": 2}
STACKED = {"tf_v1_multi_rnn_cell": 1, "tf_stacked_rnn_cells": 1}  # one loop over stacked cells: its number of loops


@pytest.mark.parametrize("name", sorted(FRAMEWORK))
def test_tensorflow_frontend_fixtures(name: str) -> None:
    """Keras layers with return_sequences on and off (a one-row TensorList keeps the last output), go_backwards,
    Bidirectional (ReverseSequence around a forward loop), two layers one after the other (the second reads the
    first's fused output), other activations, an RNN layer over an LSTMCell, a run-time length, stacked cells in one
    loop (LSTM, GRU, RNN: the first cell computed outside, the loop fused again); TensorFlow 1's dynamic_rnn over its
    cells (control flow v1: the step read from a TensorArray scattered from the input, [x, h] times one matrix, the
    output written to a TensorArray that grows), MultiRNNCell included; Keras layers through TensorFlow Lite (the
    output TensorList written by Concat(rows before k, row, rows after k); at batch 1 a flattened [1, N] -> [N]
    recurrent product); Keras 2 (tf_keras) layers from a SavedModel (the sequence a sliced Loop input, the last
    output a Result without back edge whose zero-iteration value is empty, GRU(reset_after=False) splitting its
    recurrent product with a -1 length, hard_sigmoid spelled out as clip(x * 0.2 + 0.5, 0, 1)); a Dense layer (Keras'
    Tensordot: Reshape, MatMul, Reshape back to Concat(Gather(Shape(x)), [N])) before a Bidirectional LSTM on a run-time
    length, whose loops read their length from the Dense's input: fused, equal to OpenVINO and to TensorFlow's
    outputs."""
    d = FIXTURES / name
    stored = np.load(d / "inputs.npz")
    inputs = [stored[n] for n in stored.files]
    expected = np.load(d / "expected.npz")
    fused = assert_equivalent(d / "model.xml", inputs, rtol=1e-4)
    if any(n.op_type == "Scan" for n in fused.graph.node):  # the default passes lowered a fused RNN
        assert_lowered_rnn(fused)
    if count_loops(fused):  # that, or they dispatched a GRU on its run-time batch (gru_scan.py)
        assert count_loops(fused) == count_ops(fused, "Scan") == \
            sum(n.op_type == "Scan" for n in fused.graph.node) + gru_dispatches(fused)
        fused = assert_equivalent(d / "model.xml", inputs, rtol=1e-4, optimize=False)
    assert count_loops(fused) == 0 and sum(count_ops(fused, o) for o in RECURRENT) == FRAMEWORK[name]
    feed = dict(zip([i.name for i in fused.graph.input], inputs))
    for got, want in zip(run_onnxruntime(fused, feed), (expected[f"arr_{i}"] for i in range(len(expected.files)))):
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)
    loops = STACKED.get(name, FRAMEWORK[name])
    assert count_loops(assert_equivalent(d / "model.xml", inputs, rtol=1e-4, fuse=False)) == loops


def test_encoder_decoder_openvino_cannot_run() -> None:
    """A Keras encoder LSTM's final h and c as a decoder LSTM's initial state, on a static batch: OpenVINO's CPU
    plugin fails on the IR ("object is not initialized"; tests/translate/control_flow/test_framework_fixtures.py pins
    that), both conversions compute TensorFlow's result, the default one with two LSTM nodes, the second started from
    the first's Y_h and Y_c."""
    d = FIXTURES / "tf_lstm_seq2seq_static_batch"
    stored = np.load(d / "inputs.npz")
    expected = np.load(d / "expected.npz")["arr_0"]
    for fuse in (True, False):
        proto = ir2onnx.convert(d / "model.xml", fuse=fuse)
        assert (count_loops(proto), count_ops(proto, "LSTM")) == ((0, 2) if fuse else (2, 0))
        got, = run_onnxruntime(proto, {n: stored[n] for n in stored.files})
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    graph = ir2onnx.convert(d / "model.xml").graph
    encoder, decoder = (n for n in graph.node if n.op_type == "LSTM")
    assert encoder.output[1] in _upstream(graph, decoder.input[5])
    assert encoder.output[2] in _upstream(graph, decoder.input[6])


def _upstream(graph: onnx.GraphProto, value: str) -> set[str]:
    """The values `value` is computed from (itself included)."""
    producer = {o: n for n in graph.node for o in n.output}
    seen, todo = set(), [value]
    while todo:
        v = todo.pop()
        if v not in seen:
            seen.add(v)
            todo.extend(i for i in (producer[v].input if v in producer else ()) if i)
    return seen


def stacked_loop(*, second_reads: str, loop: bool) -> Any:
    """Two spelled-out Keras LSTM cells in one TensorIterator or Loop body: the second reads the first's new h (a
    stacked network), or its previous h or its new c (what a fused first cell does not provide per step)."""
    rng = np.random.default_rng(0)
    first, second = spelled("keras_lstm", rng, 4, 3), spelled("keras_lstm", rng, 3, 3)
    X = ops.parameter([2, 5, 4], np.float32, name="X")
    bx = ops.parameter([2, 1, 4], np.float32)
    states = [ops.parameter([2, 3], np.float32) for _ in range(4)]
    h1, c1 = first(ops.reshape(bx, ops.constant(np.array([-1, 4], np.int64)), False), states[0], states[1])
    h2, c2 = second({"new_h": h1, "previous_h": states[0], "new_c": c1}[second_reads], states[2], states[3])
    results = [ops.result(v) for v in (h1, c1, h2, c2)]
    r_y = ops.result(ops.unsqueeze(h2, ops.constant(np.array([1], np.int64))))
    if loop:
        it = ops.parameter([], np.int64)
        node = ops.loop(ops.constant(np.int64(5)), ops.constant(True))
        node.set_function(ov.Model([ops.result(ops.constant(True)), *results, r_y], [it, bx, *states]))
        node.set_special_body_ports([0, 0])
    else:
        node = ops.tensor_iterator()
        node.set_body(ov.Model([*results, r_y], [bx, *states]))
    node.set_sliced_input(bx, X.output(0), 0, 1, 1, -1, 1)
    zeros = ops.constant(np.zeros((2, 3), np.float32))
    for p, r in zip(states, results):
        node.set_merged_input(p, zeros.output(0), r.output(0))
    outs = [node.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 1), node.get_iter_value(results[1].output(0), -1)]
    return ov.Model(outs, [X])


@pytest.mark.parametrize("loop", [False, True], ids=["ti", "loop"])
@pytest.mark.parametrize("second_reads", ["new_h", "previous_h", "new_c"])
def test_stacked_spelled_out_cells(tmp_path: Path, second_reads: str, loop: bool) -> None:
    """Two spelled-out cells in one body: the first is fused before the loop, then the second (two LSTM nodes); a
    second cell reading the first's previous h or new c keeps the loop."""
    xml = save_ir(stacked_loop(second_reads=second_reads, loop=loop), tmp_path)
    inputs = rng_inputs([((2, 5, 4), np.float32)])
    fused = assert_equivalent(xml, inputs, optimize=False)
    assert_equivalent(xml, inputs)
    assert (count_loops(fused), count_ops(fused, "LSTM")) == ((0, 2) if second_reads == "new_h" else (1, 0))


@pytest.mark.parametrize("starts_below,fused", [(0, True), (2, False)])
def test_computed_initial_condition(tmp_path: Path, starts_below: int, fused: bool) -> None:
    """A Loop over a run-time length whose initial condition is `c < length`: fused when it holds for every
    non-empty sequence (c = 0), a loop when a short sequence would not start it (c = 2)."""
    xml = save_ir(recurrent_loop("keras_lstm", loop=True, trip=-1, dynamic_steps=True, starts_below=starts_below),
                  tmp_path)
    for steps in (2, 5):
        proto = assert_equivalent(xml, _inputs("keras_lstm", steps=steps))
        assert count_loops(proto) == (0 if fused else 1)


@pytest.mark.parametrize("steps", [1, 3, 6])
@pytest.mark.parametrize("name,op", [("tf_lstm_run_time_length", "LSTM"), ("tf_gru_last_run_time_length", "GRU")])
def test_tensorflow_run_time_length(name: str, op: str, steps: int) -> None:
    """Keras layers over a sequence of run-time length (the whole output sequence, or the last output only): the
    frontend starts the loop only if 0 < length (a computed initial condition) and clips its TensorList writes to
    the buffer's rows; fused, equal to OpenVINO at any length."""
    d = FIXTURES / name
    x = np.load(d / "inputs.npz")["x"][:, :steps]
    fused = assert_equivalent(d / "model.xml", [x], rtol=1e-4)
    assert count_loops(fused) == 0 and count_ops(fused, op) == 1


@pytest.mark.parametrize("lengths", [[6, 3], [0, 6], [1, 2], [9, 6], [-1, 4]],
                         ids=["full_and_short", "empty_row", "short", "longer_than_sequence", "negative"])
@pytest.mark.parametrize("name,op", [("tf_v1_lstm_cell_sequence_length", "LSTM"),
                                     ("tf_v1_gru_cell_sequence_length", "GRU")])
def test_tensorflow_v1_sequence_length(name: str, op: str, lengths: list[int]) -> None:
    """TensorFlow 1's dynamic_rnn(sequence_length=lens) masks each row from its length on (states kept, outputs
    zero): fused with sequence_lens clipped to [0, steps], a row of length 0 keeping its initial states; equal to
    OpenVINO for every kind of length."""
    d = FIXTURES / name
    x = np.load(d / "inputs.npz")["x:0"]
    fused = assert_equivalent(d / "model.xml", [x, np.array(lengths, np.int32)], rtol=1e-4)
    assert count_loops(fused) == 0 and count_ops(fused, op) == 1


# OpenVINO's ReverseSequence (around a reverse sequence's loop) refuses lengths past the sequence
SEQUENCE_LENGTHS = {"forward": [7, 3, 0, 1, 11, -2, 6], "reverse": [7, 3, 0, 1, 7, 2, 6]}


@pytest.mark.parametrize("static", [False, True], ids=["run_time_shapes", "static_shapes"])
@pytest.mark.parametrize("lengths", ["input", "full", "constant"])
@pytest.mark.parametrize("direction", ["forward", "reverse"])
@pytest.mark.parametrize("kind,op", [("lstm", "LSTM"), ("gru", "GRU"), ("rnn", "RNN")])
def test_openvino_sequence_as_tensor_iterator(tmp_path: Path, kind: str, op: str, direction: str, lengths: str,
                                              static: bool) -> None:
    """OpenVINO's ConvertSequenceToTensorIterator form (a cell in a TensorIterator whose body masks each row by a step
    counter against its length: outputs zero and states zeroed past it, final states held at its last step) is one
    node with sequence_lens, equal to OpenVINO for rows of every kind of length (full, short, 0, 1, longer than the
    sequence, negative; given, constant or read from the shape); lengths read from the shape are dropped from the
    node afterwards."""
    rows = np.array(SEQUENCE_LENGTHS[direction], np.int32)
    model = openvino_sequence_ti(kind, direction, rows.tolist() if lengths == "constant" else lengths,
                                 shape=(len(rows), 7) if static else None)
    xml = save_ir(model, tmp_path)
    x, h0, c0 = rng_inputs([((len(rows), 7, 4), np.float32), ((len(rows), 1, 3), np.float32),
                            ((len(rows), 1, 3), np.float32)])
    feed = {"x": x, "h0": h0, "c0": c0, "lens": rows}
    inputs = [feed[p.get_any_name()] for p in ov.Core().read_model(xml).inputs]
    fused = assert_equivalent(xml, inputs, optimize=False)
    assert count_loops(fused) == 0 and count_ops(fused, op) == 1
    default = assert_equivalent(xml, inputs)
    nodes = [n for n in all_nodes(default) if n.op_type in RECURRENT]
    if lengths == "full":
        assert all(len(n.input) < 5 or not n.input[4] for n in nodes), "full lengths were kept"
    assert count_loops(assert_equivalent(xml, inputs, fuse=False)) >= 1


@pytest.mark.parametrize("variant,fused", [("openvino", True), ("zeroed_state_read", False),
                                           ("unmasked_output", False), ("held_a_step_late", False)])
def test_counter_masked_near_misses(tmp_path: Path, variant: str, fused: bool) -> None:
    """The counter-masked body written by hand fuses; a zeroed state read after the loop, a per-step output that
    goes on past a row's length, or values held one step late keep the loop (each equal to OpenVINO)."""
    xml = save_ir(masked_ti_lstm(variant), tmp_path)
    x, h0, c0 = rng_inputs([((6, 5, 4), np.float32), ((6, 3), np.float32), ((6, 3), np.float32)])
    proto = assert_equivalent(xml, [x, h0, c0, np.array([5, 3, 0, 1, 9, -2], np.int32)], optimize=False)
    assert count_loops(proto) == (0 if fused else 1)


@pytest.mark.parametrize("optimize", [True, False])
def test_replaced_weights_are_dropped(tmp_path: Path, optimize: bool) -> None:
    """The body's (reordered) weights do not stay in the model beside the fused node's."""
    xml = save_ir(recurrent_loop("lstm4", inputs=64, hidden=32), tmp_path)
    fused = assert_equivalent(xml, _inputs("lstm4", inputs=64, hidden=32), optimize=optimize)
    used = {i for n in fused.graph.node for i in n.input}
    assert [t.name for t in fused.graph.initializer if t.name not in used] == []
    weights = sum(np.prod(t.dims) for t in fused.graph.initializer)
    assert weights < 1.1 * 4 * 32 * (64 + 32 + 2)


@pytest.mark.parametrize("shape,target,reason", [
    ((1, 8), [-1], "is not a MatMul"),  # a batch of one flattened: read through, on to what it reshapes
    ((2, 4), [-1], "reshapes more than a batch of one"),
    ((1, 8), [2, 4], "reshapes more than a batch of one"),
])
def test_reshape_in_a_gate_term(shape: tuple[int, ...], target: list[int], reason: str) -> None:
    """A Reshape in a gate's linear form is read through only when it flattens [1, N] to [N] (TensorFlow Lite at
    batch 1: the broadcasting Add that reads it gives the same values)."""
    term = oir.Value(name="term", type=oir.TensorType(oir.DataType.FLOAT), shape=oir.Shape(list(shape)))
    target_value = oir.Value(name="target", const_value=oir.tensor(np.array(target, np.int64)))
    reshape = oir.Node("", "Reshape", [term, target_value])
    reader = _Reader(oir.Value(name="x"), oir.Value(name="h"))
    with pytest.raises(NoMatch, match=reason):
        reader.linear(reshape.outputs[0])
