"""LSTM/GRU/Scan nodes that onnxruntime would fail on or end the process on, given an empty sequence (GRU, Scan) or
an empty batch (GRU, LSTM), run behind an If (passes/empty_inputs.py). onnxruntime runs in a subprocess here: without
the If, the test would not fail, it would end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnx_ir as oir
import pytest
from onnx import TensorProto, helper, numpy_helper

import ir2onnx
from ir2onnx.passes.empty_inputs import GuardEmptyInputsPass
from ir2onnx.verify.openvino_ref import run_openvino
from tests.fixture_paths import FIXTURES
from tests.passes.recurrent.test_fuse import _inputs
from tests.passes.rnn_builders import recurrent_loop
from tests.utils import count_ops, rewritten, save_ir, weight_levels

I, H = 3, 4

_RUN = """
import sys, numpy as np, onnxruntime as ort
s = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
feed = dict(np.load(sys.argv[2]))
np.savez(sys.argv[3], *s.run(None, feed))
"""


def _run_apart(proto: onnx.ModelProto, feed: dict[str, np.ndarray], tmp_path: Path) -> list[np.ndarray]:
    """The model's outputs from onnxruntime in a process of its own (failing the test if that process dies)."""
    model, inputs, outputs = tmp_path / "m.onnx", tmp_path / "in.npz", tmp_path / "out.npz"
    onnx.save(proto, model)
    np.savez(inputs, **feed)
    done = subprocess.run([sys.executable, "-c", _RUN, str(model), str(inputs), str(outputs)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, f"onnxruntime ended with {done.returncode}: {done.stderr.strip()[-300:]}"
    stored = np.load(outputs)
    return [stored[f"arr_{i}"] for i in range(len(stored.files))]


def _node_model(op: str, direction: str, initial: bool, dims: list[int | str]) -> onnx.ModelProto:
    gates = {"LSTM": 4, "GRU": 3}[op]
    d = 2 if direction == "bidirectional" else 1
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n)
             for n, s in (("W", (d, gates * H, I)), ("R", (d, gates * H, H)), ("B", (d, 2 * gates * H)))]
    ins = ["X", "W", "R", "B"]
    inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, dims)]
    if initial:
        ins += ["", "h0"] + (["c0"] if op == "LSTM" else [])
        inputs += [helper.make_tensor_value_info(n, TensorProto.FLOAT, [d, dims[1], H]) for n in ins[5:]]
    outs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    node = helper.make_node(op, ins, outs, hidden_size=H, direction=direction)
    shapes = [[dims[0], d, dims[1], H]] + [[d, dims[1], H]] * (len(outs) - 1)
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info(o, TensorProto.FLOAT, shape)
                                                      for o, shape in zip(outs, shapes)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _guarded(proto: onnx.ModelProto) -> onnx.ModelProto:
    return rewritten(proto, GuardEmptyInputsPass)


@pytest.mark.parametrize("initial", [False, True], ids=["zeros", "initial"])
@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
@pytest.mark.parametrize("op", ["LSTM", "GRU"])
def test_empty_inputs(tmp_path: Path, op: str, direction: str, initial: bool) -> None:
    """On a run-time time axis and batch: the same outputs as the node where nothing is empty; with no step or no
    row, outputs of the node's shapes, Y empty and the states the initial ones (zeros without them; for an LSTM over
    no step, onnxruntime's kernel would return zeros, not the initial states)."""
    proto = _node_model(op, direction, initial, ["T", "N", I])
    guarded = _guarded(proto)
    assert [n.op_type for n in guarded.graph.node][-1] == "If" and count_ops(guarded, op) == 1
    then_branch = next(a.g for a in guarded.graph.node[-1].attribute if a.name == "then_branch")
    assert {t.name for t in then_branch.initializer} == {"W", "R", "B"}, \
        "the node's weights are the branch's own (onnxruntime prepacks those)"
    d = 2 if direction == "bidirectional" else 1
    rng = np.random.default_rng(1)
    for steps, rows in ((5, 2), (1, 1), (0, 2), (3, 0), (0, 0)):
        feed = {"X": rng.standard_normal((steps, rows, I)).astype(np.float32)}
        if initial:
            feed |= {n: rng.standard_normal((d, rows, H)).astype(np.float32)
                     for n in (["h0", "c0"] if op == "LSTM" else ["h0"])}
        got = _run_apart(guarded, feed, tmp_path)
        assert [g.shape for g in got] == [(steps, d, rows, H)] + [(d, rows, H)] * (len(got) - 1)
        if rows and steps:
            for g, want in zip(got, _run_apart(proto, feed, tmp_path), strict=True):
                np.testing.assert_array_equal(g, want)
        else:
            for g, name in zip(got[1:], ["h0", "c0"]):
                np.testing.assert_array_equal(g, feed[name] if initial else 0)


@pytest.mark.parametrize("op,dims", [("LSTM", [5, 2, I]), ("LSTM", ["T", 2, I]), ("GRU", [5, 2, I])])
def test_sizes_known_positive_stay_unguarded(op: str, dims: list[int | str]) -> None:
    """Nothing to guard where the sizes in question are static and positive (the LSTM's time axis is safe)."""
    guarded = _guarded(_node_model(op, "forward", False, dims))
    assert [n.op_type for n in guarded.graph.node] == [op]


# fixtures whose time axis (1) or batch (0) is a run-time size: the axis emptied
EMPTIED = [("tf_keras2_lstm_last_run_time_length", 1), ("tf_keras2_lstm_masking_seq_run_time_length", 1),
           ("tf_keras2_gru_reset_before", 0), ("tf_v1_lstm_cell", 0), ("tf_v1_gru_cell", 0), ("tf_lstm_seq2seq", 0)]


@pytest.mark.parametrize("name,axis", EMPTIED)
def test_converted_models_with_empty_inputs(tmp_path: Path, name: str, axis: int) -> None:
    """Converted Keras and TensorFlow 1 models fed an empty sequence or batch: they run, and equal OpenVINO."""
    stored = np.load(FIXTURES / name / "inputs.npz")
    feed = {k: np.take(stored[k], [], axis=axis) for k in stored.files}
    xml = FIXTURES / name / "model.xml"
    got = _run_apart(ir2onnx.convert(xml), feed, tmp_path)
    want = run_openvino(str(xml), list(feed.values()))
    assert [g.shape for g in got] == [w.shape for w in want]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


# PyTorch fixtures (time axis of x, batch axis of x): their sequences have a run-time length; GRUs and RNNs become
# Scans (gru_scan.py at a batch of at least 16 rows and 4,096 row elements, rnn_scan.py always) returning every step
NO_STEP = [("torch_gru", 1, 0), ("torch_gru_time_major", 0, 1), ("torch_gru_bidirectional_2layers_h0", 1, 0),
           ("torch_rnn_3layers_no_bias", 1, 0), ("torch_rnn_bidirectional_2layers", 1, 0),
           ("torch_rnn_relu_2layers", 1, 0), ("torch_lstm_bidirectional_2layers", 1, 0)]


@pytest.mark.parametrize("batch", [2, 512])
@pytest.mark.parametrize("name,time,rows", NO_STEP)
def test_recurrent_scans_over_no_step(tmp_path: Path, name: str, time: int, rows: int, batch: int) -> None:
    """PyTorch GRU/RNN/LSTM layers given a sequence of no step: [batch, 0, hidden] (or [0, batch, hidden]) as
    OpenVINO returns, the last states the initial ones. The Scans of gru_scan.py and rnn_scan.py stack the state they
    carry: they run behind the empty-input If, their empty output shaped at run time after that state (unguarded,
    onnxruntime's Scan failed on them)."""
    stored = np.load(FIXTURES / name / "inputs.npz")
    feed = {}
    for k in stored.files:  # x: no step; x and the initial states (batch on axis 1): `batch` rows
        a = np.take(stored[k], [], axis=time) if k == "x" else stored[k]
        axis = rows if k == "x" else 1
        feed[k] = np.take(a, np.arange(batch) % a.shape[axis], axis=axis)
    xml = FIXTURES / name / "model.xml"
    want = run_openvino(str(xml), list(feed.values()))
    # OpenVINO's last states after no step are undefined memory: the initial states are the answer
    want = [w if w.size == 0 else feed.get("h0", np.zeros_like(w)) for w in want]
    for fuse in (True, False):
        got = _run_apart(ir2onnx.convert(xml, fuse=fuse), feed, tmp_path)
        assert [g.shape for g in got] == [w.shape for w in want]
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)


def test_guarded_recurrent_scans_read_their_weights_one_level_up() -> None:
    """rnn_scan.py's Scans (PyTorch RNN layers), behind the empty-input If, read their recurrent weights from the
    If's branch, one level up, where onnxruntime prepacks them: left in the main graph, two levels up, their MatMuls
    ran unpacked (measured: a 512/256 RNN at batch 1 1.2x slower)."""
    proto = ir2onnx.convert(FIXTURES / "torch_rnn_relu_2layers" / "model.xml")
    assert count_ops(proto, "Scan") == 2 and count_ops(proto, "If") >= 2
    found = weight_levels(proto, "MatMul", slice(1, 2))
    assert found and all(up <= 1 for levels in found for up in levels), found


def test_gru_sequence_output_with_no_step(tmp_path: Path) -> None:
    """A Keras 2 GRU(return_sequences) given no step: [batch, 0, hidden], TensorFlow's shape, where OpenVINO returns
    [0, 0, hidden] (its Loop's concatenated output after no iteration); the literal loop's conversion returns
    OpenVINO's, as onnxruntime's Loop does."""
    xml = FIXTURES / "tf_keras2_gru_run_time_length" / "model.xml"
    feed = {"x": np.zeros((2, 0, 4), np.float32)}
    assert [g.shape for g in _run_apart(ir2onnx.convert(xml), feed, tmp_path)] == [(2, 0, 8)]
    assert [w.shape for w in run_openvino(str(xml), [feed["x"]])] == [(0, 0, 8)]
    assert [g.shape for g in _run_apart(ir2onnx.convert(xml, fuse=False), feed, tmp_path)] == [(0, 0, 8)]


def _scan_model(dims: list[int | str]) -> onnx.ModelProto:
    """A Scan over X [B, T, I] on axis 1 (s' = tanh(s + x_t @ W)), stacking each s' on axis 1 of Y [B, T, H]."""
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((I, H)).astype(np.float32), "W")
    body = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["xw"]), helper.make_node("Add", ["s", "xw"], ["pre"]),
         helper.make_node("Tanh", ["pre"], ["s2"]), helper.make_node("Identity", ["s2"], ["y"])], "body",
        [helper.make_tensor_value_info("s", TensorProto.FLOAT, [dims[0], H]),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [dims[0], I])],
        [helper.make_tensor_value_info("s2", TensorProto.FLOAT, [dims[0], H]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [dims[0], H])])
    scan = helper.make_node("Scan", ["s0", "X"], ["sT", "Y"], body=body, num_scan_inputs=1, scan_input_axes=[1],
                            scan_output_axes=[1])
    graph = helper.make_graph([scan], "g", [helper.make_tensor_value_info("s0", TensorProto.FLOAT, [dims[0], H]),
                                             helper.make_tensor_value_info("X", TensorProto.FLOAT, dims)],
                              [helper.make_tensor_value_info("sT", TensorProto.FLOAT, [dims[0], H]),
                               helper.make_tensor_value_info("Y", TensorProto.FLOAT, [dims[0], dims[1], H])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_scan_over_no_step(tmp_path: Path) -> None:
    """A Scan of run-time length: the same outputs where it has steps; with none, the initial state and an empty Y
    of the body's other dims (onnxruntime's Scan fails there)."""
    proto = _scan_model([2, "T", I])
    guarded = _guarded(proto)
    assert [n.op_type for n in guarded.graph.node][-1] == "If" and count_ops(guarded, "Scan") == 1
    rng = np.random.default_rng(2)
    for steps in (4, 1, 0):
        feed = {"s0": rng.standard_normal((2, H)).astype(np.float32),
                "X": rng.standard_normal((2, steps, I)).astype(np.float32)}
        got = _run_apart(guarded, feed, tmp_path)
        assert [g.shape for g in got] == [(2, H), (2, steps, H)]
        if steps:
            for g, want in zip(got, _run_apart(proto, feed, tmp_path), strict=True):
                np.testing.assert_array_equal(g, want)
        else:
            np.testing.assert_array_equal(got[0], feed["s0"])
    assert [n.op_type for n in _guarded(_scan_model([2, 5, I])).graph.node] == ["Scan"]


def test_tensor_iterator_over_no_step(tmp_path: Path) -> None:
    """A TensorIterator (LSTMCell) over a sequence of run-time length, converted literally (fuse=False) and fused:
    with no step, the initial states and a sequence output of shape [batch, 0, hidden], OpenVINO's shape (whose
    states are then undefined memory: the initial ones are the answer). The literal Scan ended onnxruntime's process
    with a floating point exception."""
    xml = save_ir(recurrent_loop("lstm4", dynamic_steps=True, outputs=("seq", "h", "c")), tmp_path)
    empty = _inputs("lstm4", steps=0)
    feed = dict(zip(["X", "H0", "C0"], empty))
    assert [w.shape for w in run_openvino(str(xml), empty)] == [(2, 0, 3), (2, 3), (2, 3)]
    for fuse in (False, True):
        got = _run_apart(ir2onnx.convert(xml, fuse=fuse), feed, tmp_path)
        assert [g.shape for g in got] == [(2, 0, 3), (2, 3), (2, 3)]
        np.testing.assert_array_equal(got[1], empty[1])
        np.testing.assert_array_equal(got[2], empty[2])


def test_guarded_scan_reads_its_weights_one_level_up(tmp_path: Path) -> None:
    """A GRU on a run-time batch and length, its last state read (a Keras GRU's last output), becomes gru_scan.py's If
    on the batch, whose Scan then goes behind the empty-input If: the constant-only nodes computing the Scan's
    weights move into that If's branch with it, so that the body reads what onnxruntime folds from them one level up
    and prepacks (two levels up, it ran its Gemms unpacked). The model still computes the GRU, at a large batch and
    over no step."""
    from ir2onnx.passes.pipeline import optimize
    from tests.passes.recurrent.test_gru_scan import gru_model, min_batch

    proto = gru_model("T", "N", linear_before_reset=1, outputs="Y_h")
    model = oir.serde.deserialize_model(proto)
    optimize(model)
    GuardEmptyInputsPass()(model)
    out = oir.to_proto(model)
    dispatch = next(n for n in out.graph.node if n.op_type == "If")
    then = next(a.g for a in dispatch.attribute if a.name == "then_branch")
    guard = next(n for n in then.node if n.op_type == "If")
    nonempty = next(a.g for a in guard.attribute if a.name == "then_branch")
    scan = next(n for n in nonempty.node if n.op_type == "Scan")
    made_here = {o for n in nonempty.node for o in n.output} | {i.name for i in nonempty.initializer}
    weights = [g.input[1] for g in scan.attribute[0].g.node if g.op_type == "Gemm"]
    assert len(weights) == 2 and all(w in made_here for w in weights)
    rng = np.random.default_rng(2)
    batch = min_batch(256)
    for steps in (3, 0):
        feed = {"X": rng.standard_normal((steps, batch, 4)).astype(np.float32),
                "H0": rng.standard_normal((1, batch, 256)).astype(np.float32)}
        got = _run_apart(out, feed, tmp_path)[0]
        assert got.shape == (1, batch, 256)
        want = _run_apart(proto, feed, tmp_path)[0] if steps else feed["H0"]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6)
