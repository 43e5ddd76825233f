"""sequence_lens that provably mean every step are dropped from LSTM/GRU/RNN nodes, and ReverseSequence with them is
a reversing Slice; anything else is kept."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import onnx_ir as oir
import openvino as ov
import openvino.opset13 as ops
import pytest
from onnx import TensorProto, helper, numpy_helper

from ir2onnx.passes.pipeline import optimize
from ir2onnx.passes.recurrent import chunk_rnn
from ir2onnx.passes.recurrent.full_lengths import DropFullSequenceLensPass
from ir2onnx.verify.onnxruntime_run import run_onnxruntime
from tests.fixture_paths import FIXTURES
from tests.passes.recurrent.test_chunk_rnn import rnn_model
from tests.utils import all_nodes, assert_equivalent, count_ops, gru_dispatches

I, H = 3, 4
RECURRENT = ("LSTM", "GRU", "RNN")

Node = onnx.NodeProto
Lens = Callable[[list[Node]], str]  # appends the nodes computing the lengths, returns their name


def _c(nodes: list[Node], name: str, value: object, dtype: object = np.int64) -> str:
    nodes.append(helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.array(value, dtype))))
    return name


def torch_form(index: int = 1, shape_of: str = "x") -> Lens:
    """OpenVINO's PyTorch frontend: Cast(Expand(Gather(Cast(Shape(x)), time axis), [batch])) to int32."""
    def build(nodes: list[Node]) -> str:
        nodes += [helper.make_node("Shape", [shape_of], ["shp"]),
                  helper.make_node("Cast", ["shp"], ["shp32"], to=TensorProto.INT32),
                  helper.make_node("Gather", ["shp32", _c(nodes, "t_i", index)], ["steps"], axis=0),
                  helper.make_node("Gather", ["shp", _c(nodes, "b_i", [0])], ["batch"], axis=0),
                  helper.make_node("Expand", ["steps", "batch"], ["lens64"]),
                  helper.make_node("Cast", ["lens64"], ["lens"], to=TensorProto.INT32)]
        return "lens"
    return build


def shape_start(nodes: list[Node]) -> str:
    """Shape(x, start=1)[0] (the time axis), concatenated twice: the lengths of a batch of 2."""
    nodes += [helper.make_node("Shape", ["x"], ["tail"], start=1),
              helper.make_node("Gather", ["tail", _c(nodes, "zero", [0])], ["t1"], axis=0),
              helper.make_node("Concat", ["t1", "t1"], ["lens64"], axis=0),
              helper.make_node("Cast", ["lens64"], ["lens"], to=TensorProto.INT32)]
    return "lens"


def constant(value: list[int]) -> Lens:
    return lambda nodes: _c(nodes, "lens", value, np.int32)


def float_detour(nodes: list[Node]) -> str:
    """The time axis through a float Cast and a scale: not a move of the shape's elements."""
    nodes += [helper.make_node("Shape", ["x"], ["shp"]),
              helper.make_node("Gather", ["shp", _c(nodes, "t_i", [1])], ["steps"], axis=0),
              helper.make_node("Cast", ["steps"], ["f"], to=TensorProto.FLOAT),
              helper.make_node("Mul", ["f", _c(nodes, "half", [0.5], np.float32)], ["g"]),
              helper.make_node("Cast", ["g"], ["g64"], to=TensorProto.INT64),
              helper.make_node("Expand", ["g64", _c(nodes, "b2", [2])], ["lens64"]),
              helper.make_node("Cast", ["lens64"], ["lens"], to=TensorProto.INT32)]
    return "lens"


def model(op: str, lens: Lens, *, layers: int = 1, static: bool = False, reshape: bool = False) -> onnx.ModelProto:
    """x [B=2, T, I] batch-first -> Transpose -> `layers` recurrent nodes (each next one reads the last one's Y
    through Squeeze of the direction axis, or with `reshape` through Transpose and Reshape [0, 0, -1] as the
    PyTorch frontend joins bidirectional layers) with the lengths `lens` builds; outputs Y of the last node, Y_h."""
    rng = np.random.default_rng(0)
    g = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    nodes: list[Node] = []
    name = lens(nodes)
    nodes.append(helper.make_node("Transpose", ["x"], ["X0"], perm=[1, 0, 2]))
    inits, x = [], "X0"
    for k in range(layers):
        width = I if k == 0 else H
        inits += [numpy_helper.from_array(rng.standard_normal((1, g * H, width)).astype(np.float32), f"W{k}"),
                  numpy_helper.from_array(rng.standard_normal((1, g * H, H)).astype(np.float32) * 0.5, f"R{k}")]
        nodes.append(helper.make_node(op, [x, f"W{k}", f"R{k}", "", name], [f"Y{k}", f"Yh{k}"], hidden_size=H))
        if reshape:
            nodes += [helper.make_node("Transpose", [f"Y{k}"], [f"T{k}"], perm=[0, 2, 1, 3]),
                      helper.make_node("Reshape", [f"T{k}", _c(nodes, f"ax{k}", [0, 0, -1])], [f"X{k + 1}"])]
        else:
            nodes.append(helper.make_node("Squeeze", [f"Y{k}", _c(nodes, f"ax{k}", [1])], [f"X{k + 1}"]))
        x = f"X{k + 1}"
    dims: list[int | str] = [2, 7, I] if static else ["batch", "time", I]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims),
                                           helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["t", "b", H]),
                               helper.make_tensor_value_info(f"Yh{layers - 1}", TensorProto.FLOAT, [1, "b", H])],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def dropped(proto: onnx.ModelProto) -> tuple[onnx.ModelProto, list[bool]]:
    """The model after the pass, and for each recurrent node whether it still has sequence_lens."""
    m = oir.serde.deserialize_model(proto)
    DropFullSequenceLensPass()(m)
    out = oir.to_proto(m)
    onnx.checker.check_model(out, full_check=True)
    return out, [len(n.input) > 4 and n.input[4] != "" for n in out.graph.node if n.op_type in RECURRENT]


CASES = [
    ("torch form", torch_form(), {}, True),
    ("torch form, two layers", torch_form(), {"layers": 2}, True),
    ("torch form, two layers joined by Reshape", torch_form(), {"layers": 2, "reshape": True}, True),
    ("negative index", torch_form(-2), {}, True),
    ("Shape start, Concat", shape_start, {}, True),
    ("constant, static", constant([7, 7]), {"static": True}, True),
    ("batch axis", torch_form(0), {}, False),
    ("another input's shape", torch_form(1, "y"), {}, False),
    ("not a move of the elements", float_detour, {}, False),
    ("constant, dynamic time", constant([7, 7]), {}, False),
    ("constant, shorter", constant([7, 5]), {"static": True}, False),
]


@pytest.mark.parametrize("op", RECURRENT)
@pytest.mark.parametrize("label,lens,kw,drop", CASES, ids=[c[0] for c in CASES])
def test_lengths(op: str, label: str, lens: Lens, kw: dict[str, object], drop: bool) -> None:
    before = model(op, lens, **kw)  # type: ignore[arg-type]
    after, kept = dropped(before)
    assert kept == [not drop] * int(kw.get("layers", 1))  # type: ignore[call-overload]
    rng = np.random.default_rng(1)
    feed = {n: rng.standard_normal((2, 7, I)).astype(np.float32) for n in ("x", "y")}
    for got, want in zip(run_onnxruntime(after, feed), run_onnxruntime(before, feed)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(("name", "scans"), [("torch_rnn_relu_2layers", 2), ("torch_rnn_3layers_no_bias", 3),
                                             ("torch_rnn_bidirectional_2layers", 4)])
def test_torch_rnn_becomes_scan(name: str, scans: int) -> None:
    """OpenVINO's PyTorch frontend gives its RNNSequence the run-time time axis as lengths: dropped, the RNN is
    lowered like one without them (one Scan per layer and direction), and the result stays OpenVINO's and
    PyTorch's."""
    d = FIXTURES / name
    stored = np.load(d / "inputs.npz")
    inputs = [stored[n] for n in stored.files]
    proto = assert_equivalent(d / "model.xml", inputs, rtol=1e-4)
    assert count_ops(proto, "RNN") == 0 and count_ops(proto, "Scan") == scans
    expected = np.load(d / "expected.npz")
    feed = dict(zip([i.name for i in proto.graph.input], inputs))
    for got, want in zip(run_onnxruntime(proto, feed), (expected[f"arr_{i}"] for i in range(len(expected.files)))):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["torch_lstm", "torch_gru_bidirectional", "torch_gru_time_major",
                                  "torch_lstm_bidirectional_2layers", "torch_lstm_time_major_2layers_states"])
def test_torch_fixtures_lose_their_lengths(name: str) -> None:
    d = FIXTURES / name
    stored = np.load(d / "inputs.npz")
    proto = assert_equivalent(d / "model.xml", [stored[n] for n in stored.files], rtol=1e-4)
    nodes = [n for n in all_nodes(proto) if n.op_type in RECURRENT]  # a GRU may sit in an If (gru_scan.py)
    assert nodes and all(len(n.input) <= 4 or n.input[4] == "" for n in nodes)


@pytest.mark.parametrize("op", ["LSTM", "GRU"])
def test_dropped_lengths_let_long_sequences_chunk(op: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default passes: constant full-length lengths on a long sequence go, then the node is chunked
    (chunk_rnn.py takes only nodes without lengths); the result is bit-identical."""
    monkeypatch.setattr(chunk_rnn, "WHOLE_CHUNKS", 1)  # chunks from two on (4.7 MiB here)
    proto = rnn_model(op, 300, 16, 64, lens=300)
    m = oir.serde.deserialize_model(proto)
    optimize(m)
    out = oir.to_proto(m)
    nodes = [n for n in out.graph.node if n.op_type == op]
    assert len(nodes) > 1 and all(len(n.input) <= 4 or n.input[4] == "" for n in nodes)
    rng = np.random.default_rng(2)
    feed = {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
            for i in proto.graph.input}
    for got, want in zip(run_onnxruntime(out, feed), run_onnxruntime(proto, feed), strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op", RECURRENT)
def test_onnx_frontend_lengths_dropped(tmp_path: Path, op: str) -> None:
    """An ONNX LSTM/GRU/RNN without lengths, read by OpenVINO's ONNX frontend (which gives its sequence op the time
    axis as lengths) and converted back: no lengths; the RNN is lowered."""
    g = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    rng = np.random.default_rng(4)
    graph = helper.make_graph(
        [helper.make_node(op, ["X", "W", "R", "B"], ["Y", "Y_h"], hidden_size=H)], "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["T", "N", I])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(rng.standard_normal((1, g * H, I)).astype(np.float32), "W"),
         numpy_helper.from_array(rng.standard_normal((1, g * H, H)).astype(np.float32) * 0.5, "R"),
         numpy_helper.from_array(rng.standard_normal((1, 2 * g * H)).astype(np.float32), "B")])
    onnx_path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8), onnx_path)
    xml = tmp_path / "m.xml"
    ov.save_model(ov.convert_model(str(onnx_path)), str(xml), compress_to_fp16=False)
    proto = assert_equivalent(xml, [rng.standard_normal((6, 2, I)).astype(np.float32)], rtol=1e-4)
    nodes = [n for n in all_nodes(proto) if n.op_type in RECURRENT]
    assert all(len(n.input) <= 4 or n.input[4] == "" for n in nodes)
    # the RNN is lowered; the GRU, on a run-time batch, dispatched on it to a Scan or itself
    assert len(nodes) == (0 if op == "RNN" else 1) and count_ops(proto, "Scan") == (op != "LSTM")
    assert gru_dispatches(proto) == (op == "GRU")


def _reversal(lengths: str, *, time: int | None = 6) -> ov.Model:
    """x [batch, time, I] reversed along its time axis by a ReverseSequence whose lengths are `lengths`:
    "tf": TensorFlow's ReverseV2 as OpenVINO's TensorFlow frontend writes it (an Unsqueeze, seq_axis 2 with batch_axis
    0, the lengths read from a permuted ShapeOf); "broadcast": the inputs' length (6) as a constant broadcast to the
    batch (provably full only where the time axis is static);
    "shape": the time axis read from ShapeOf(x) and broadcast; "short": a constant one step short of the inputs'
    length (6); "input": a model input. Outputs: the reversed x, and tanh of it (one more reader)."""
    def i64(v: object) -> ov.Node:
        return ops.constant(np.array(v, np.int64))

    x = ops.parameter([-1, -1 if time is None else time, I], np.float32, name="x")
    params = [x]
    batch = ops.gather(ops.shape_of(x), i64([0]), i64(0))
    if lengths == "tf":
        u = ops.unsqueeze(x, i64([0]))
        lens = ops.gather(ops.gather(ops.shape_of(u), i64([0, 2, 1, 3]), i64(0)), i64([1]), i64(0))
        y = ops.squeeze(ops.reverse_sequence(u, lens, 0, 2), i64([0]))
    else:
        if lengths == "input":
            lens = ops.parameter([-1], np.int32, name="lens")
            params.append(lens)
        elif lengths == "shape":
            lens = ops.broadcast(ops.gather(ops.shape_of(x), i64([1]), i64(0)), batch)
        else:
            steps = 6 - (1 if lengths == "short" else 0)  # the inputs' length
            lens = ops.broadcast(ops.constant(np.array(steps, np.int32)), batch)
        y = ops.reverse_sequence(x, lens, 0, 1)
    return ov.Model([y, ops.tanh(y)], params)


def _reversed_rows(x: np.ndarray, lens: np.ndarray | None = None) -> np.ndarray:
    out = x.copy()
    for row, n in enumerate(lens if lens is not None else [x.shape[1]] * x.shape[0]):
        out[row, :n] = x[row, :n][::-1]
    return out


@pytest.mark.parametrize("lengths,time,sliced", [
    ("tf", 6, True), ("tf", None, True), ("broadcast", 6, True), ("shape", None, True), ("shape", 6, True),
    ("broadcast", None, False), ("short", 6, False), ("input", 6, False)])
def test_full_reversal_is_a_slice(tmp_path: Path, lengths: str, time: int | None, sliced: bool) -> None:
    """A ReverseSequence whose lengths are provably every row's whole time axis becomes one Slice with step -1 on
    it (the Transposes the translation puts around TensorFlow's seq_axis 2 go with it); other lengths keep it."""
    xml = tmp_path / "m.xml"
    ov.save_model(_reversal(lengths, time=time), str(xml))
    rng = np.random.default_rng(3)
    inputs = [rng.standard_normal((2, 6, I)).astype(np.float32)]
    if lengths == "input":
        inputs.append(np.array([6, 4], np.int32))
    proto = assert_equivalent(xml, inputs)
    reversed_x = run_onnxruntime(proto, dict(zip([i.name for i in proto.graph.input], inputs)))[0]
    lens = inputs[1] if lengths == "input" else np.array([5, 5]) if lengths == "short" else None
    np.testing.assert_array_equal(reversed_x, _reversed_rows(inputs[0], lens))
    assert count_ops(proto, "ReverseSequence") == (0 if sliced else 1)
    if sliced:
        assert count_ops(proto, "Transpose") == 0 and count_ops(proto, "Slice") == 1


def test_torch_sequence_output_moved_once() -> None:
    """The LSTMSequence's Y [T, 1, B, H] reaches the IR's batch-major, direction-squeezed output through one rank-3
    Transpose that writes the output itself: no rank-4 Transpose (onnxruntime moves [T, 1, B, H] half as fast) and no
    Squeeze writing the output (a copy)."""
    d = FIXTURES / "torch_lstm"
    stored = np.load(d / "inputs.npz")
    proto = assert_equivalent(d / "model.xml", [stored[n] for n in stored.files], rtol=1e-4)
    producers = {o: n for n in proto.graph.node for o in n.output}
    last = producers[proto.graph.output[0].name]
    assert last.op_type == "Transpose" and list(last.attribute[0].ints) == [1, 0, 2]
    assert all(len(n.attribute[0].ints) < 4 for n in proto.graph.node if n.op_type == "Transpose")
