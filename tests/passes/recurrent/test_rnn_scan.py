"""RNN nodes become a Scan over MatMul + Add + activation (onnxruntime's RNN kernel is slow); the rest stay RNN."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ir2onnx.passes.recurrent.rnn_scan import RNNAsScanPass
from ir2onnx.verify.onnxruntime_run import run_onnxruntime
from tests.utils import count_ops, rewritten

H, I = 3, 4


def rnn_model(steps: int | str, batch: int, *, bias: bool = True, h0: bool = True, outputs: int = 2,
              seq_lens: bool = False, **attrs: Any) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    d = 2 if attrs.get("direction") == "bidirectional" else 1
    inits = [numpy_helper.from_array(rng.standard_normal((d, H, I)).astype(np.float32), "W"),
             numpy_helper.from_array(rng.standard_normal((d, H, H)).astype(np.float32) * 0.5, "R")]
    ins = ["X", "W", "R", "B" if bias else "", "lens" if seq_lens else "", "H0" if h0 else ""]
    if bias:
        inits.append(numpy_helper.from_array(rng.standard_normal((d, 2 * H)).astype(np.float32), "B"))
    batch_major = attrs.get("layout") == 1
    graph_in = [helper.make_tensor_value_info("X", TensorProto.FLOAT, [batch, steps, I] if batch_major else [steps, batch, I])]
    if seq_lens:
        inits.append(numpy_helper.from_array(np.full(batch, steps, np.int32), "lens"))
    if h0:
        graph_in.append(helper.make_tensor_value_info("H0", TensorProto.FLOAT, [d, batch, H]))
    outs = ["Y", "Y_h"][:outputs]
    node = helper.make_node("RNN", ins, outs, hidden_size=H, **attrs)
    shapes = {"Y": [batch, steps, d, H] if batch_major else [steps, d, batch, H],
              "Y_h": [batch, d, H] if batch_major else [d, batch, H]}
    graph = helper.make_graph([node], "g", graph_in,
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, shapes[o]) for o in outs], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def lowered(proto: onnx.ModelProto) -> onnx.ModelProto:
    return rewritten(proto, RNNAsScanPass)


def feed(proto: onnx.ModelProto, steps: int, batch: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    dirs = 2 if "bidirectional" in str(proto.graph.node[0].attribute) else 1
    shapes = {"X": (steps, batch, I), "H0": (dirs, batch, H)}
    return {i.name: rng.standard_normal(shapes[i.name]).astype(np.float32) for i in proto.graph.input
            if i.name in shapes}


CASES = [
    ({}, 5, 2),
    ({"direction": "reverse"}, 5, 2),
    ({"activations": ["Relu"], "clip": 0.7}, 6, 3),
    ({"activations": ["Sigmoid"], "direction": "reverse"}, 4, 1),
    ({"activations": ["Softsign"]}, 3, 2),
    ({"bias": False, "h0": False}, 5, 3),
    ({"outputs": 1}, 5, 2),
    ({"direction": "reverse", "outputs": 1, "h0": False}, 7, 1),
    ({"direction": "bidirectional"}, 5, 2),
    ({"direction": "bidirectional", "activations": ["Relu", "Relu"], "clip": 0.7, "h0": False}, 6, 3),
    ({"direction": "bidirectional", "bias": False, "outputs": 1}, 4, 1),
]


@pytest.mark.parametrize("kw,steps,batch", CASES)
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_lowered_rnn_computes_the_rnn(kw: dict[str, Any], steps: int, batch: int, dynamic: bool) -> None:
    proto = rnn_model("T" if dynamic else steps, batch, **kw)
    out = lowered(proto)
    dirs = 2 if kw.get("direction") == "bidirectional" else 1
    assert count_ops(out, "RNN") == 0 and count_ops(out, "Scan") == dirs
    inputs = feed(proto, steps, batch)
    for got, want in zip(run_onnxruntime(out, inputs), run_onnxruntime(proto, inputs)):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert [o.name for o in out.graph.output] == [o.name for o in proto.graph.output]


@pytest.mark.parametrize("kw", [{}, {"direction": "reverse", "h0": False}, {"clip": 0.2, "bias": False},
                                {"direction": "bidirectional"}])
def test_one_step_needs_no_scan(kw: dict[str, Any]) -> None:
    proto = rnn_model(1, 3, **kw)
    out = lowered(proto)
    assert count_ops(out, "RNN") == 0 and count_ops(out, "Scan") == 0
    inputs = feed(proto, 1, 3)
    for got, want in zip(run_onnxruntime(out, inputs), run_onnxruntime(proto, inputs)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kw", [
    {"direction": "bidirectional", "activations": ["Tanh", "Relu"]},
    {"seq_lens": True},
    {"activations": ["LeakyRelu"], "activation_alpha": [0.1]},
    {"layout": 1},
])
def test_other_forms_stay_rnn(kw: dict[str, Any]) -> None:
    proto = rnn_model(5, 2, **kw)
    assert count_ops(lowered(proto), "RNN") == 1


@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_weights_read_at_run_time(direction: str) -> None:
    """W, R and B fed as inputs: each direction's are sliced and transposed by nodes, not constants."""
    proto = rnn_model(5, 2, direction=direction)
    weights = {i.name: numpy_helper.to_array(i) for i in proto.graph.initializer}
    del proto.graph.initializer[:]
    for name, array in weights.items():
        proto.graph.input.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(array.shape)))
    out = lowered(proto)
    assert count_ops(out, "RNN") == 0 and count_ops(out, "Scan") == (2 if direction == "bidirectional" else 1)
    inputs = {**feed(proto, 5, 2), **weights}
    for got, want in zip(run_onnxruntime(out, inputs), run_onnxruntime(proto, inputs)):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
