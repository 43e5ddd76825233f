"""IRs made by OpenVINO from ONNX models (Scan, Loop, LSTM, GRU): ONNX -> OpenVINO IR -> ir2onnx -> onnxruntime,
compared with OpenVINO on the IR."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import openvino as ov
import pytest
from onnx import TensorProto, helper

from tests.convert.control_flow.builders import ti_lstm
from tests.utils import assert_equivalent, rng_inputs

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


@pytest.mark.parametrize(("op", "gates", "direction"), [("LSTM", 4, "forward"), ("LSTM", 4, "bidirectional"),
                                                        ("GRU", 3, "reverse"), ("RNN", 1, "forward")])
def test_recurrent_onnx_ops(tmp_path: Path, op: str, gates: int, direction: str) -> None:
    dirs = 2 if direction == "bidirectional" else 1
    hs, t, b, i = 4, 6, 2, 3
    outs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    node = helper.make_node(op, ["X", "W", "R", "B", "", "H0"], outs, hidden_size=hs, direction=direction)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("X", F, [t, b, i]), helper.make_tensor_value_info("H0", F, [dirs, b, hs])],
        [helper.make_tensor_value_info(n, F, None) for n in outs],
        [_init("W", (dirs, gates * hs, i)), _init("R", (dirs, gates * hs, hs)), _init("B", (dirs, 2 * gates * hs))],
    )
    xml = _to_ir(graph, tmp_path)
    assert_equivalent(xml, rng_inputs([((t, b, i), np.float32), ((dirs, b, hs), np.float32)]))


def test_compressed_weights_inside_a_loop(tmp_path: Path) -> None:
    """save_model's default f16 weights: Const f16 -> Convert inside a TensorIterator body."""
    model = ti_lstm(2, 5, 3, 4)
    xml = tmp_path / "m.xml"
    ov.save_model(model, str(xml))  # compress_to_fp16 defaults to True
    assert 'element_type="f16"' in xml.read_text()
    assert_equivalent(xml, rng_inputs([((2, 5, 3), np.float32), ((2, 4), np.float32), ((2, 4), np.float32)]))
