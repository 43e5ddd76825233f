"""GRU nodes at larger batches become a Scan over Gemm + gate arithmetic (onnxruntime's GRU kernel is slower there);
on a run-time batch, an If on it picks the Scan or the GRU node. Small batches, one step and other forms stay GRU."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import onnx_ir as oir
import pytest
from onnx import TensorProto, helper, numpy_helper

import ir2onnx
from ir2onnx.passes.pipeline import optimize
from ir2onnx.passes.recurrent.gru_scan import GRUAsScanPass, min_batch
from ir2onnx.verify.onnxruntime_run import run_onnxruntime
from tests.fixture_paths import FIXTURES
from tests.utils import assert_equivalent, count_ops, gru_dispatches, rewritten, weight_levels

H, I = 256, 4
BIG = min_batch(H)


def gru_model(steps: int | str, batch: int | str, *, bias: bool = True, h0: bool = True, outputs: str = "both",
              seq_lens: bool = False, **attrs: Any) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    d = 2 if attrs.get("direction") == "bidirectional" else 1
    inits = [numpy_helper.from_array(rng.standard_normal((d, 3 * H, I)).astype(np.float32) * 0.5, "W"),
             numpy_helper.from_array(rng.standard_normal((d, 3 * H, H)).astype(np.float32) * 0.1, "R")]
    if bias:
        inits.append(numpy_helper.from_array(rng.standard_normal((d, 6 * H)).astype(np.float32), "B"))
    if seq_lens:
        inits.append(numpy_helper.from_array(np.full(batch, steps, np.int32), "lens"))
    ins = ["X", "W", "R", "B" if bias else "", "lens" if seq_lens else "", "H0" if h0 else ""]
    batch_major = attrs.get("layout") == 1
    graph_in = [helper.make_tensor_value_info("X", TensorProto.FLOAT, [batch, steps, I] if batch_major else [steps, batch, I])]
    if h0:
        graph_in.append(helper.make_tensor_value_info("H0", TensorProto.FLOAT, [batch, d, H] if batch_major else [d, batch, H]))
    outs = {"both": ["Y", "Y_h"], "Y": ["Y"], "Y_h": ["", "Y_h"]}[outputs]
    shapes = {"Y": [batch, steps, d, H] if batch_major else [steps, d, batch, H],
              "Y_h": [batch, d, H] if batch_major else [d, batch, H]}
    graph = helper.make_graph([helper.make_node("GRU", ins, outs, hidden_size=H, **attrs)], "g", graph_in,
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, shapes[o]) for o in outs if o],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def lowered(proto: onnx.ModelProto) -> onnx.ModelProto:
    return rewritten(proto, GRUAsScanPass)


def feed(proto: onnx.ModelProto, steps: int, batch: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    directions = proto.graph.input[-1].type.tensor_type.shape.dim[0].dim_value or 1
    shapes = {"X": (steps, batch, I), "H0": (directions, batch, H)}
    return {i.name: rng.standard_normal(shapes[i.name]).astype(np.float32) for i in proto.graph.input}


def assert_same(out: onnx.ModelProto, proto: onnx.ModelProto, steps: int, batch: int) -> None:
    inputs = feed(proto, steps, batch)
    for got, want in zip(run_onnxruntime(out, inputs), run_onnxruntime(proto, inputs), strict=True):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6)
    assert [o.name for o in out.graph.output] == [o.name for o in proto.graph.output]


CASES = [
    {},
    {"linear_before_reset": 1},
    {"direction": "reverse"},
    {"direction": "reverse", "linear_before_reset": 1, "outputs": "Y"},
    {"clip": 0.3},
    {"clip": 0.3, "linear_before_reset": 1},
    {"activations": ["HardSigmoid", "LeakyRelu"], "activation_alpha": [0.3, 0.05], "activation_beta": [0.4]},
    {"activations": ["Sigmoid", "Softsign"]},
    {"bias": False, "h0": False},
    {"bias": False, "linear_before_reset": 1, "outputs": "Y_h"},
]


@pytest.mark.parametrize("kw", CASES)
def test_static_batch_becomes_a_scan(kw: dict[str, Any]) -> None:
    proto = gru_model(5, BIG, **kw)
    out = lowered(proto)
    assert count_ops(out, "GRU") == 0 and count_ops(out, "Scan") == 1 and count_ops(out, "If") == 0
    assert_same(out, proto, 5, BIG)


@pytest.mark.parametrize("kw", CASES[:4] + CASES[-2:])
def test_run_time_batch_dispatches_on_it(kw: dict[str, Any]) -> None:
    """Both branches computed: a batch at the threshold runs the Scan, one below it the GRU node."""
    proto = gru_model("T", "N", **kw)
    out = lowered(proto)
    assert gru_dispatches(out) == 1
    for batch in (BIG, BIG - 1, 1):
        assert_same(out, proto, 4, batch)


@pytest.mark.parametrize("kw", [
    {"direction": "bidirectional"},
    {"seq_lens": True},
    {"layout": 1},
    {"activations": ["Affine", "Tanh"], "activation_alpha": [0.5], "activation_beta": [0.1]},
])
def test_other_forms_stay_gru(kw: dict[str, Any]) -> None:
    proto = gru_model(5, BIG, **kw)
    out = lowered(proto)
    assert count_ops(out, "GRU") == 1 and count_ops(out, "Scan") == 0


@pytest.mark.parametrize("steps,batch", [(5, BIG - 1), (1, BIG), (1, "N")])
def test_small_batch_or_one_step_stays_gru(steps: int, batch: int | str) -> None:
    assert count_ops(lowered(gru_model(steps, batch)), "GRU") == 1


def test_threshold() -> None:
    """Batch 16 from hidden 256 on; smaller hidden sizes need batch x hidden >= 4096."""
    assert [min_batch(h) for h in (64, 128, 256, 512)] == [64, 32, 16, 16]


@pytest.mark.parametrize("name,axes,dispatches", [
    ("tf_v1_gru_cell", [0], 1),
    ("torch_gru_time_major", [1], 1),
    ("torch_gru_bidirectional_2layers_h0", [0, 1], 4),  # two layers, each split into its two directions
])
def test_frontend_gru_on_a_large_batch(name: str, axes: list[int], dispatches: int) -> None:
    """A GRU from OpenVINO's TensorFlow / PyTorch frontends on a run-time batch: at a batch past the threshold (the
    Scan) and at the stored one (the GRU node), equal to OpenVINO."""
    d = FIXTURES / name
    stored = np.load(d / "inputs.npz")
    inputs = [stored[n] for n in stored.files]
    rng = np.random.default_rng(3)
    large = []
    for x, axis in zip(inputs, axes, strict=True):
        shape = list(x.shape)
        shape[axis] = min_batch(8)  # the fixtures' hidden size
        large.append(rng.standard_normal(shape).astype(np.float32))
    proto = assert_equivalent(d / "model.xml", large, rtol=1e-4)
    assert gru_dispatches(proto) == dispatches
    assert_equivalent(d / "model.xml", inputs, rtol=1e-4)


@pytest.mark.parametrize("batch", [BIG, "N"])
def test_bidirectional_split_then_lowered(batch: int | str) -> None:
    """The default passes: chunk_rnn.py splits a bidirectional GRU into its two directions (no time chunks for a
    GRU this pass takes), then each becomes a Scan, or an If on a run-time batch."""
    proto = gru_model(5, batch, direction="bidirectional", linear_before_reset=1)
    model = oir.serde.deserialize_model(proto)
    optimize(model)
    out = oir.to_proto(model)
    if batch == "N":
        assert gru_dispatches(out) == 2
    else:
        assert count_ops(out, "GRU") == 0 and count_ops(out, "Scan") == 2
    for rows in (BIG, 2) if batch == "N" else (BIG,):
        assert_same(out, proto, 5, rows)


def test_torch_sequence_written_by_the_branches() -> None:
    """nn.GRU(batch_first) on a run-time batch: each branch of the If writes Y batch-first itself (the Scan's and
    the GRU node's Y through a rank-3 Transpose; a branch output that is a view would be copied), and the If's output
    is the graph output. At a batch past the threshold (the Scan) and at the stored one (the GRU node), equal to
    OpenVINO."""
    d = FIXTURES / "torch_gru"
    stored = np.load(d / "inputs.npz")
    x = stored[stored.files[0]]
    large = np.random.default_rng(3).standard_normal((min_batch(8), *x.shape[1:])).astype(np.float32)
    proto = assert_equivalent(d / "model.xml", [large], rtol=1e-4)
    assert_equivalent(d / "model.xml", [x], rtol=1e-4)
    assert gru_dispatches(proto) == 1
    dispatch = next(n for n in proto.graph.node if n.op_type == "If")
    assert proto.graph.output[0].name == dispatch.output[0]
    for branch in (a.g for a in dispatch.attribute):
        producers = {o: n for n in branch.node for o in n.output}
        assert producers[branch.output[0].name].op_type == "Transpose"


def test_branch_gru_reads_its_weights_one_level_up() -> None:
    """The GRU node of the If's small-batch branch, behind the empty-input If there (empty_inputs.py), reads W and R
    through Reshapes that onnxruntime folds at most one level above it, so that it prepacks them: read from the main
    graph two levels up, it did not (1.1-1.3x the time)."""
    found = weight_levels(ir2onnx.convert(FIXTURES / "torch_gru" / "model.xml"), "GRU", slice(1, 3))
    assert found and all(up <= 1 for levels in found for up in levels), found
