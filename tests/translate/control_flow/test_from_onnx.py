"""IRs made by OpenVINO from ONNX models (Scan, Loop, LSTM, GRU): ONNX -> OpenVINO IR -> ir2onnx -> onnxruntime,
compared with OpenVINO on the IR."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import openvino as ov
import pytest
from onnx import TensorProto, helper

from tests.translate.control_flow.builders import ti_lstm
from tests.utils import assert_equivalent, count_loops, count_ops, rng_inputs

F = TensorProto.FLOAT
RNG = np.random.default_rng(5)


def _to_ir(graph: onnx.GraphProto, tmp_path: Path, opset: int = 17) -> Path:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    src = tmp_path / "src.onnx"
    onnx.save(model, str(src))
    xml = tmp_path / "model.xml"
    ov.save_model(ov.Core().read_model(str(src)), str(xml), compress_to_fp16=False)
    return xml


def _init(name: str, shape: tuple[int, ...]) -> onnx.TensorProto:
    return helper.make_tensor(name, F, shape, (RNG.standard_normal(shape) * 0.5).astype(np.float32).ravel())


@pytest.mark.parametrize("direction", [0, 1])
def test_scan_becomes_tensor_iterator(tmp_path: Path, direction: int) -> None:
    body = helper.make_graph(
        [helper.make_node("MatMul", ["h_in", "W"], ["hw"]), helper.make_node("Add", ["hw", "x_t"], ["a"]),
         helper.make_node("Tanh", ["a"], ["h_out"]), helper.make_node("Identity", ["h_out"], ["y"])],
        "body",
        [helper.make_tensor_value_info("h_in", F, [2, 3]), helper.make_tensor_value_info("x_t", F, [2, 3])],
        [helper.make_tensor_value_info("h_out", F, [2, 3]), helper.make_tensor_value_info("y", F, [2, 3])],
    )
    graph = helper.make_graph(
        [helper.make_node("Scan", ["h0", "x"], ["h", "ys"], body=body, num_scan_inputs=1,
                          scan_input_axes=[1], scan_input_directions=[direction], scan_output_axes=[1])],
        "g", [helper.make_tensor_value_info("h0", F, [2, 3]), helper.make_tensor_value_info("x", F, [2, 5, 3])],
        [helper.make_tensor_value_info("h", F, [2, 3]), helper.make_tensor_value_info("ys", F, [2, 5, 3])],
        [_init("W", (3, 3))],
    )
    xml = _to_ir(graph, tmp_path)
    assert 'type="TensorIterator"' in xml.read_text() or 'type="Loop"' in xml.read_text()
    assert_equivalent(xml, rng_inputs([((2, 3), np.float32), ((2, 5, 3), np.float32)]))


def _recurrent_graph(op: str, direction: str, *, h0: bool = False, peepholes: bool = False,
                     **attrs: object) -> tuple[onnx.GraphProto, list[tuple[int, ...]]]:
    """One ONNX LSTM/GRU/RNN node over X (and H0), hidden 5, 6 steps, batch 2, input 3; its graph and input shapes."""
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    dirs = 2 if direction == "bidirectional" else 1
    hs, t, b, i = 5, 6, 2, 3
    shapes = [(b, t, i) if attrs.get("layout") == 1 else (t, b, i)] + ([(dirs, b, hs)] if h0 else [])
    outs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    inits = [_init("W", (dirs, gates * hs, i)), _init("R", (dirs, gates * hs, hs)), _init("B", (dirs, 2 * gates * hs))]
    inputs = ["X", "W", "R", "B", "", "H0" if h0 else ""]
    if peepholes:
        inputs += ["", "P"]
        inits.append(_init("P", (dirs, 3 * hs)))
    node = helper.make_node(op, inputs, outs, hidden_size=hs, direction=direction, **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, F, list(shape))
                                            for n, shape in zip(["X", "H0"], shapes)],
                              [helper.make_tensor_value_info(n, F, None) for n in outs], inits)
    return graph, shapes


@pytest.mark.parametrize(("op", "direction"), [("LSTM", "forward"), ("LSTM", "bidirectional"), ("GRU", "reverse"),
                                               ("RNN", "forward")])
def test_recurrent_onnx_ops(tmp_path: Path, op: str, direction: str) -> None:
    graph, shapes = _recurrent_graph(op, direction, h0=True)
    xml = _to_ir(graph, tmp_path)
    assert_equivalent(xml, rng_inputs([(shape, np.float32) for shape in shapes]))


SEQUENCE_FORMS: dict[str, tuple[str, str, dict[str, object], bool]] = {  # op, direction, attributes, peepholes
    "lstm-peepholes": ("LSTM", "forward", {}, True),
    "lstm-peepholes-bidirectional": ("LSTM", "bidirectional", {}, True),
    "lstm-input-forget": ("LSTM", "forward", {"input_forget": 1}, False),
    "lstm-batch-major": ("LSTM", "forward", {"layout": 1}, False),
    "lstm-batch-major-bidirectional": ("LSTM", "bidirectional", {"layout": 1}, False),
    "lstm-relu-bidirectional": ("LSTM", "bidirectional", {"activations": ["Sigmoid", "Relu", "Relu"] * 2}, False),
    "gru-batch-major": ("GRU", "forward", {"layout": 1}, False),
    "gru-clip-bidirectional": ("GRU", "bidirectional", {"clip": 0.7}, False),
    "rnn-batch-major-bidirectional": ("RNN", "bidirectional", {"layout": 1}, False),
    "rnn-clip-reverse": ("RNN", "reverse", {"clip": 0.3}, False),
}


@pytest.mark.parametrize("fuse", [True, False])
@pytest.mark.parametrize("form", list(SEQUENCE_FORMS))
def test_recurrent_onnx_op_forms(tmp_path: Path, form: str, fuse: bool) -> None:
    """Peepholes, input_forget, batch-major layout, clip and other activations, as OpenVINO's ONNX frontend writes
    them (loops, or sequence ops with transposes around them)."""
    op, direction, attrs, peepholes = SEQUENCE_FORMS[form]
    graph, shapes = _recurrent_graph(op, direction, peepholes=peepholes, **attrs)
    xml = _to_ir(graph, tmp_path)
    assert_equivalent(xml, rng_inputs([(shape, np.float32) for shape in shapes]), fuse=fuse)


def test_compressed_weights_inside_a_loop(tmp_path: Path) -> None:
    """save_model's default f16 weights: Const f16 -> Convert inside a TensorIterator body."""
    model = ti_lstm(2, 5, 3, 4)
    xml = tmp_path / "m.xml"
    ov.save_model(model, str(xml))  # compress_to_fp16 defaults to True
    assert 'element_type="f16"' in xml.read_text()
    assert_equivalent(xml, rng_inputs([((2, 5, 3), np.float32), ((2, 4), np.float32), ((2, 4), np.float32)]))


I64, BOOL = TensorProto.INT64, TensorProto.BOOL
_vi = helper.make_tensor_value_info


def _loop_body(use_iteration: bool) -> onnx.GraphProto:
    """s <- s * 0.5 + x (+ i / 4); continue while sum(s) < 6; scan output s * 2."""
    nodes = [helper.make_node("Mul", ["s_in", "half"], ["s_half"]), helper.make_node("Add", ["s_half", "x"], ["s_x"])]
    if use_iteration:
        nodes += [helper.make_node("Cast", ["i"], ["i_f"], to=F), helper.make_node("Div", ["i_f", "four"], ["i_q"]),
                  helper.make_node("Add", ["s_x", "i_q"], ["s_out"])]
    else:
        nodes.append(helper.make_node("Identity", ["s_x"], ["s_out"]))
    nodes += [helper.make_node("ReduceSum", ["s_out"], ["total"], keepdims=0),
              helper.make_node("Less", ["total", "limit"], ["c_out"]),
              helper.make_node("Mul", ["s_out", "two"], ["scan"])]
    consts = [helper.make_tensor(n, F, [], [v])
              for n, v in (("half", 0.5), ("four", 4.0), ("limit", 6.0), ("two", 2.0))]
    return helper.make_graph(
        nodes, "body",
        [_vi("i", I64, []), _vi("c_in", BOOL, []), _vi("s_in", F, [2, 3])],
        [_vi("c_out", BOOL, []), _vi("s_out", F, [2, 3]), _vi("scan", F, [2, 3])], consts)


@pytest.mark.parametrize("use_iteration", [False, True])
@pytest.mark.parametrize("trip", [1, 3, 50])
def test_onnx_loop_with_computed_condition(tmp_path: Path, use_iteration: bool, trip: int) -> None:
    graph = helper.make_graph(
        [helper.make_node("Loop", ["M", "cond", "s0"], ["s", "ys"], body=_loop_body(use_iteration))], "g",
        [_vi("M", I64, []), _vi("cond", BOOL, []), _vi("s0", F, [2, 3]), _vi("x", F, [2, 3])],
        [_vi("s", F, [2, 3]), _vi("ys", F, None)])
    xml = _to_ir(graph, tmp_path)
    assert 'type="Loop"' in xml.read_text()
    s0, x = rng_inputs([((2, 3), np.float32), ((2, 3), np.float32)], seed=trip)
    assert_equivalent(xml, [np.array(trip, np.int64), np.array(True), s0 * 0.1, np.abs(x)])


def test_onnx_loop_without_trip_count(tmp_path: Path) -> None:
    """No M: the loop runs until the body condition is false (OpenVINO: trip count -1)."""
    graph = helper.make_graph(
        [helper.make_node("Loop", ["", "cond", "s0"], ["s", "ys"], body=_loop_body(True))], "g",
        [_vi("cond", BOOL, []), _vi("s0", F, [2, 3]), _vi("x", F, [2, 3])], [_vi("s", F, [2, 3]), _vi("ys", F, None)])
    xml = _to_ir(graph, tmp_path)
    s0, x = rng_inputs([((2, 3), np.float32), ((2, 3), np.float32)])
    assert_equivalent(xml, [np.array(True), s0 * 0.1, np.abs(x) + 0.1])


@pytest.mark.parametrize(("in_dir", "out_dir", "out_axis"), [(0, 1, 0), (1, 0, 1), (1, 1, 2)])
def test_scan_directions_and_output_axes(tmp_path: Path, in_dir: int, out_dir: int, out_axis: int) -> None:
    body = helper.make_graph(
        [helper.make_node("Add", ["h_in", "x_t"], ["a"]), helper.make_node("Tanh", ["a"], ["h_out"]),
         helper.make_node("Mul", ["h_out", "x_t"], ["y"])],
        "body", [helper.make_tensor_value_info("h_in", F, [2, 3]), helper.make_tensor_value_info("x_t", F, [2, 3])],
        [helper.make_tensor_value_info("h_out", F, [2, 3]), helper.make_tensor_value_info("y", F, [2, 3])])
    graph = helper.make_graph(
        [helper.make_node("Scan", ["h0", "x"], ["h", "ys"], body=body, num_scan_inputs=1, scan_input_axes=[0],
                          scan_input_directions=[in_dir], scan_output_axes=[out_axis],
                          scan_output_directions=[out_dir])],
        "g", [helper.make_tensor_value_info("h0", F, [2, 3]), helper.make_tensor_value_info("x", F, [4, 2, 3])],
        [helper.make_tensor_value_info("h", F, [2, 3]), helper.make_tensor_value_info("ys", F, None)])
    xml = _to_ir(graph, tmp_path)
    assert 'type="TensorIterator"' in xml.read_text()
    assert_equivalent(xml, rng_inputs([((2, 3), np.float32), ((4, 2, 3), np.float32)]))


@pytest.mark.parametrize("length", ["static", "run_time"])
def test_onnx_loop_over_a_spelled_out_lstm_is_fused(tmp_path: Path, length: str) -> None:
    """An ONNX Loop stepping a spelled-out LSTM cell (Gather of step i, MatMul + Add + Split + activations), as a
    scripted PyTorch loop exports: OpenVINO's ONNX frontend makes it a Loop-5 whose trip count is a constant, or the
    time dim read at run time (ShapeOf -> StridedSlice -> Squeeze, a Slice of the Shape in ONNX). Fused into one
    LSTM either way and equal to OpenVINO."""
    t, b, i, hs = 5, 2, 4, 3
    v = helper.make_tensor_value_info
    body = helper.make_graph(
        [helper.make_node("Gather", ["X", "i"], ["x_t"], axis=0),
         helper.make_node("MatMul", ["x_t", "W"], ["xw"]), helper.make_node("MatMul", ["h", "R"], ["hr"]),
         helper.make_node("Add", ["xw", "hr"], ["s"]), helper.make_node("Add", ["s", "b"], ["g"]),
         helper.make_node("Split", ["g"], ["gi", "gf", "gg", "go"], axis=1, num_outputs=4),
         helper.make_node("Sigmoid", ["gi"], ["si"]), helper.make_node("Sigmoid", ["gf"], ["sf"]),
         helper.make_node("Tanh", ["gg"], ["tg"]), helper.make_node("Sigmoid", ["go"], ["so"]),
         helper.make_node("Mul", ["sf", "c"], ["fc"]), helper.make_node("Mul", ["si", "tg"], ["ig"]),
         helper.make_node("Add", ["fc", "ig"], ["c2"]), helper.make_node("Tanh", ["c2"], ["tc"]),
         helper.make_node("Mul", ["so", "tc"], ["h2"]), helper.make_node("Identity", ["cond"], ["cond_out"]),
         helper.make_node("Identity", ["h2"], ["y"])],
        "body", [v("i", TensorProto.INT64, []), v("cond", TensorProto.BOOL, []), v("h", F, [b, hs]), v("c", F, [b, hs])],
        [v("cond_out", TensorProto.BOOL, []), v("h2", F, [b, hs]), v("c2", F, [b, hs]), v("y", F, [b, hs])])
    inits = [_init("W", (i, 4 * hs)), _init("R", (hs, 4 * hs)), _init("b", (4 * hs,)),
             helper.make_tensor("true", TensorProto.BOOL, [], [True])]
    nodes = [helper.make_node("Loop", ["M", "true", "h0", "c0"], ["hT", "cT", "Y"], body=body)]
    if length == "static":
        inits.append(helper.make_tensor("M", TensorProto.INT64, [], [t]))
    else:
        nodes[:0] = [helper.make_node("Shape", ["X"], ["dims"]),
                     helper.make_node("Slice", ["dims", "zero", "one"], ["first"]),
                     helper.make_node("Squeeze", ["first"], ["M"])]
        inits += [helper.make_tensor("zero", TensorProto.INT64, [1], [0]),
                  helper.make_tensor("one", TensorProto.INT64, [1], [1])]
    graph = helper.make_graph(nodes, "g", [v("X", F, [t if length == "static" else "T", b, i]), v("h0", F, [b, hs]),
                                           v("c0", F, [b, hs])],
                              [v("hT", F, [b, hs]), v("cT", F, [b, hs]), v("Y", F, None)], inits)
    xml = _to_ir(graph, tmp_path, opset=18)
    assert 'type="Loop"' in xml.read_text()
    proto = assert_equivalent(xml, rng_inputs([((t, b, i), np.float32), ((b, hs), np.float32), ((b, hs), np.float32)]))
    assert count_loops(proto) == 0 and count_ops(proto, "LSTM") == 1
