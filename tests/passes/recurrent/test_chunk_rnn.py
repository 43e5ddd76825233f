"""Long LSTM/GRU nodes become a chain of nodes over time chunks, with bit-identical results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnx_ir as oir
import pytest
from onnx import TensorProto, helper, numpy_helper

from ir2onnx.passes.recurrent import chunk_rnn
from ir2onnx.verify.onnxruntime_run import run_onnxruntime
from tests.passes.rnn_builders import recurrent_loop
from tests.utils import assert_equivalent, count_ops, rewritten, rng_inputs, save_ir

I = 4


def rnn_model(op: str, steps: int, batch: int, hidden: int, *, states: bool = True, outputs: int = 3,
              peephole: bool = False, lens: int | None = None, **attrs: Any) -> onnx.ModelProto:
    """One LSTM/GRU node; `lens`: a constant sequence_lens of that value for every batch entry."""
    rng = np.random.default_rng(0)
    g = {"LSTM": 4, "GRU": 3}[op]
    d = 2 if attrs.get("direction") == "bidirectional" else 1
    inits = [numpy_helper.from_array(rng.standard_normal((d, g * hidden, I)).astype(np.float32), "W"),
             numpy_helper.from_array(rng.standard_normal((d, g * hidden, hidden)).astype(np.float32) * 0.5, "R"),
             numpy_helper.from_array(rng.standard_normal((d, 2 * g * hidden)).astype(np.float32), "B")]
    graph_in = [helper.make_tensor_value_info("X", TensorProto.FLOAT, [steps, batch, I])]
    ins = ["X", "W", "R", "B", "" if lens is None else "lens"]
    if lens is not None:
        inits.append(numpy_helper.from_array(np.full(batch, lens, np.int32), "lens"))
    names = ["H0", "C0"] if op == "LSTM" else ["H0"]
    for n in names:
        ins.append(n if states else "")
        if states:
            graph_in.append(helper.make_tensor_value_info(n, TensorProto.FLOAT, [d, batch, hidden]))
    if peephole:
        ins.append("P")
        inits.append(numpy_helper.from_array(rng.standard_normal((d, 3 * hidden)).astype(np.float32), "P"))
    outs = ["Y", "Y_h", "Y_c"][:min(outputs, 3 if op == "LSTM" else 2)]
    shapes = {"Y": [steps, d, batch, hidden], "Y_h": [d, batch, hidden], "Y_c": [d, batch, hidden]}
    graph = helper.make_graph([helper.make_node(op, ins, outs, hidden_size=hidden, **attrs)], "g", graph_in,
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, shapes[o]) for o in outs], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def chunked(proto: onnx.ModelProto) -> onnx.ModelProto:
    return rewritten(proto, chunk_rnn.ChunkRecurrentPass)


@pytest.mark.parametrize("op,steps,batch,hidden,expected", [
    ("LSTM", 300, 16, 256, [16] * 15 + [15] * 4),  # 64 KiB per step: 16 steps per MiB, 18.75 MiB in 19 chunks
    ("LSTM", 256, 16, 256, None),  # 16 MiB: one node
    ("LSTM", 100, 16, 256, None),
    ("LSTM", 1000, 1, 256, None),  # 4 KiB per step
    ("LSTM", 5000, 1, 256, [250] * 20),
    ("LSTM", 100, 64, 256, [8] * 9 + [7] * 4),  # 25 MiB; at least 8 steps a chunk
    ("GRU", 1000, 16, 128, [42] * 16 + [41] * 8),  # 24 KiB per step: 42 steps per MiB
    ("GRU", 100, 16, 256, None),  # batch 16: a Scan instead (gru_scan.py)
])
def test_chunk_sizes(op: str, steps: int, batch: int, hidden: int, expected: list[int] | None) -> None:
    model = oir.serde.deserialize_model(rnn_model(op, steps, batch, hidden))
    sizes = chunk_rnn.chunk_sizes(next(iter(model.graph)))
    assert sizes == expected
    assert sizes is None or sum(sizes) == steps


CASES = [
    ("LSTM", {}),
    ("LSTM", {"direction": "reverse"}),
    ("LSTM", {"states": False, "outputs": 1}),
    ("LSTM", {"peephole": True, "clip": 0.9, "input_forget": 1}),
    ("LSTM", {"outputs": 2, "direction": "reverse", "activations": ["Sigmoid", "Relu", "Tanh"]}),
    ("GRU", {}),
    ("GRU", {"direction": "reverse", "linear_before_reset": 1}),
    ("GRU", {"states": False, "outputs": 2}),
    ("LSTM", {"direction": "bidirectional", "peephole": True}),
    ("LSTM", {"direction": "bidirectional", "states": False, "outputs": 1,
              "activations": ["Sigmoid", "Tanh", "Tanh", "Sigmoid", "Relu", "Tanh"]}),
    ("GRU", {"direction": "bidirectional", "linear_before_reset": 1}),
]


@pytest.mark.parametrize("op,kw", CASES)
def test_chunks_compute_the_same_bits(monkeypatch: pytest.MonkeyPatch, op: str, kw: dict[str, Any]) -> None:
    monkeypatch.setattr(chunk_rnn, "CHUNK_BYTES", 5 * 3 * 8 * 4 * 4)  # 8 steps at batch 3, hidden 5 (LSTM)
    monkeypatch.setattr(chunk_rnn, "WHOLE_CHUNKS", 1)  # chunks from two on
    steps, batch, hidden = 37, 3, 5
    proto = rnn_model(op, steps, batch, hidden, **kw)
    out = chunked(proto)
    chunks = len(chunk_rnn.chunk_sizes(next(iter(oir.serde.deserialize_model(proto).graph))) or [])
    assert chunks > 1 and count_ops(out, op) == chunks * (2 if kw.get("direction") == "bidirectional" else 1)
    assert not any(len(n.input) > 4 and n.input[4] for n in out.graph.node if n.op_type == op)
    rng = np.random.default_rng(1)
    feed = {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
            for i in proto.graph.input}
    for got, want in zip(run_onnxruntime(out, feed), run_onnxruntime(proto, feed), strict=True):
        np.testing.assert_array_equal(got, want)
    assert [o.name for o in out.graph.output] == [o.name for o in proto.graph.output]


@pytest.mark.parametrize("kw", [{"layout": 1}, {"lens": 39}, {"direction": "bidirectional",
                                                             "activations": ["Sigmoid", "LeakyRelu", "Tanh"] * 2,
                                                             "activation_alpha": [0.1, 0.1]}])
def test_other_forms_stay_whole(monkeypatch: pytest.MonkeyPatch, kw: dict[str, Any]) -> None:
    monkeypatch.setattr(chunk_rnn, "CHUNK_BYTES", 64)
    monkeypatch.setattr(chunk_rnn, "WHOLE_CHUNKS", 1)  # chunks from two on
    layout = kw.pop("layout", None)
    model = oir.serde.deserialize_model(rnn_model("LSTM", 40, 2, 3, states=False, outputs=1, **kw))
    node = next(iter(model.graph))
    if layout is not None:
        node.attributes["layout"] = oir.convenience.convert_attribute("layout", layout)
    assert chunk_rnn.chunk_sizes(node) is None
    chunk_rnn.ChunkRecurrentPass()(model)
    assert [n.op_type for n in model.graph] == ["LSTM"]


@pytest.mark.parametrize("op", ["LSTM", "GRU"])
def test_short_bidirectional_becomes_two_directions(op: str) -> None:
    """Under two chunks: no Split of the sequence, one node per direction."""
    proto = rnn_model(op, 6, 2, 3, direction="bidirectional")
    out = chunked(proto)
    assert count_ops(out, op) == 2 and count_ops(out, "Split") == (5 if op == "LSTM" else 4)  # W, R, B, H0 (and C0) per direction
    rng = np.random.default_rng(2)
    feed = {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
            for i in proto.graph.input}
    for got, want in zip(run_onnxruntime(out, feed), run_onnxruntime(proto, feed), strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("kind,reverse", [("lstm4", False), ("gru", True)])
def test_converted_loop_chunked_and_equal_to_openvino(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str,
                                                      reverse: bool) -> None:
    monkeypatch.setattr(chunk_rnn, "CHUNK_BYTES", 2 * 4 * 4 * 8 * 4)
    monkeypatch.setattr(chunk_rnn, "WHOLE_CHUNKS", 1)  # chunks from two on
    model = recurrent_loop(kind, batch=2, steps=30, inputs=4, hidden=4, reverse=reverse,
                           outputs=("seq", "h", "c") if kind == "lstm4" else ("seq", "h"))
    shapes = [((2, 30, 4), np.float32), ((2, 4), np.float32)] + ([((2, 4), np.float32)] if kind == "lstm4" else [])
    proto = assert_equivalent(save_ir(model, tmp_path), rng_inputs(shapes))
    assert count_ops(proto, "LSTM" if kind == "lstm4" else "GRU") > 1
