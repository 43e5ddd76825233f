"""Reshape/transpose glue with static shapes reduced to what moves data (CollapseReshapeChainsPass)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnx_ir as oir
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from ir2onnx.passes.pipeline import optimize
from tests.passes.rnn_builders import recurrent_loop
from tests.utils import assert_equivalent, count_ops, rng_inputs, save_ir

RECURRENT = ("LSTM", "GRU", "Scan")  # an RNN becomes a Scan (rnn_scan.py)


def _glue(proto: onnx.ModelProto) -> tuple[list[str], list[str]]:
    """Op types from the graph input to the recurrent node (its sequence input: the last of a Scan's), and from it
    to the (first) graph output."""
    producer = {o: n for n in proto.graph.node for o in n.output}
    after: list[str] = []
    node = producer[proto.graph.output[0].name]
    while node.op_type not in RECURRENT:
        after.insert(0, node.op_type)
        node = producer[node.input[0]]
    before: list[str] = []
    value = node.input[-1] if node.op_type == "Scan" else node.input[0]
    while value in producer:
        before.insert(0, producer[value].op_type)
        value = producer[value].input[0]
    assert value == proto.graph.input[0].name
    return before, after


@pytest.mark.parametrize("squeeze_step", [False, True], ids=["reshape_step", "squeeze_step"])
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("batch", [1, 16])
@pytest.mark.parametrize("kind", ["lstm4", "gru", "rnn"])
def test_fused_sequence_glue(tmp_path: Path, kind: str, batch: int, reverse: bool, squeeze_step: bool) -> None:
    """A TensorIterator over a cell on a batch-major sequence: one Transpose on each side of the fused node (batch 1:
    one Reshape each side, nothing moves), and the output written by that last op, no copy after it."""
    steps, inputs, hidden = 7, 8, 5
    model = recurrent_loop(kind, batch=batch, steps=steps, inputs=inputs, hidden=hidden, reverse=reverse,
                           outputs=("seq",), squeeze_step=squeeze_step)
    shapes = [((batch, steps, inputs), np.float32), ((batch, hidden), np.float32)]
    if kind == "lstm4":
        shapes.append(((batch, hidden), np.float32))
    proto = assert_equivalent(save_ir(model, tmp_path), rng_inputs(shapes))
    before, after = _glue(proto)
    projection = ["MatMul", "Add"] if kind == "rnn" else []  # the RNN's input projection, before its Scan
    if batch == 1:
        assert before == ["Reshape", *projection] and after == ["Reshape"]
        assert count_ops(proto, "Transpose") == 0
    else:
        assert before == ["Transpose", *projection]
        assert after in (["Transpose"], ["Squeeze", "Transpose"], ["Reshape", "Transpose"])
        assert count_ops(proto, "Transpose") == 2
    assert "Unsqueeze" not in before + after


# Hand-made graphs: onnxruntime before and after the default passes, values bit for bit.

def _i64(name: str, values: list[int]) -> onnx.TensorProto:
    return helper.make_tensor(name, TensorProto.INT64, [len(values)], values)


def _model(nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto], outputs: list[onnx.ValueInfoProto],
           consts: dict[str, list[int]] | None = None) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, [_i64(k, v) for k, v in (consts or {}).items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    return onnx.shape_inference.infer_shapes(model)  # as the converter's models: intermediate values declared


def _f32(name: str, shape: list[int | str | None] | None) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def _optimised(model: onnx.ModelProto, feed_shapes: dict[str, tuple[int, ...]]) -> onnx.ModelProto:
    """The model after the default passes, checked to compute the same outputs bit for bit under the same names,
    types and shapes."""
    irm = oir.from_proto(model)
    optimize(irm)
    out = oir.to_proto(irm)
    onnx.checker.check_model(out, full_check=True)
    assert [(o.name, o.type) for o in out.graph.output] == [(o.name, o.type) for o in model.graph.output]
    rng = np.random.default_rng(0)
    feeds = {k: rng.standard_normal(s).astype(np.float32) for k, s in feed_shapes.items()}
    for want, got in zip(_run(model, feeds), _run(out, feeds), strict=True):
        assert want.dtype == got.dtype and want.shape == got.shape
        assert want.tobytes() == got.tobytes()
    return out


def _ops(proto: onnx.ModelProto | onnx.GraphProto) -> dict[str, int]:
    return {op: count_ops(proto, op) for op in ("Squeeze", "Unsqueeze", "Reshape", "Flatten", "Identity",
                                                "Transpose", "Shape")}


def _counts(**kw: int) -> dict[str, int]:
    base = dict.fromkeys(("Squeeze", "Unsqueeze", "Reshape", "Flatten", "Identity", "Transpose", "Shape"), 0)
    base.update(kw)
    return base


N = helper.make_node
CASES = {
    # X -Unsqueeze-Reshape-Squeeze-> same shape -> Relu: the readers read X
    "to_nothing": (
        [N("Unsqueeze", ["X", "a0"], ["u"]), N("Reshape", ["u", "s"], ["r"]), N("Squeeze", ["r", "a1"], ["q"]),
         N("Relu", ["q"], ["Y"])],
        [_f32("X", [2, 3])], [_f32("Y", [2, 3])], {"a0": [0], "s": [2, 1, 3], "a1": [1]},
        _counts()),
    # Relu -> Unsqueeze -> Flatten -> Reshape -> output: one Reshape writes the output
    "to_output": (
        [N("Relu", ["X"], ["x"]), N("Unsqueeze", ["x", "a0"], ["u"]), N("Flatten", ["u"], ["f"], axis=2),
         N("Reshape", ["f", "s"], ["Y"])],
        [_f32("X", [2, 3, 4])], [_f32("Y", [6, 4])], {"a0": [1], "s": [6, -1]},
        _counts(Reshape=1)),
    # Relu -> Unsqueeze -> Squeeze -> output: Relu writes the output itself
    "to_output_nothing": (
        [N("Relu", ["X"], ["x"]), N("Unsqueeze", ["x", "a0"], ["u"]), N("Squeeze", ["u", "a0"], ["Y"])],
        [_f32("X", [2, 3])], [_f32("Y", [2, 3])], {"a0": [0]},
        _counts()),
    # the graph's input returned through a chain: one Identity remains
    "input_to_output": (
        [N("Unsqueeze", ["X", "a0"], ["u"]), N("Squeeze", ["u", "a0"], ["Y"])],
        [_f32("X", [2, 3])], [_f32("Y", [2, 3])], {"a0": [0]},
        _counts(Identity=1)),
    # u has two readers: the chain stops there
    "two_readers": (
        [N("Relu", ["X"], ["x"]), N("Unsqueeze", ["x", "a0"], ["u"]), N("Unsqueeze", ["u", "a0"], ["q"]),
         N("Neg", ["q"], ["Y"]), N("Neg", ["u"], ["Z"])],
        [_f32("X", [2, 3])], [_f32("Y", [1, 1, 2, 3]), _f32("Z", [1, 2, 3])], {"a0": [0]},
        _counts(Unsqueeze=2)),
    # dims unknown: left alone
    "dynamic": (
        [N("Unsqueeze", ["X", "a0"], ["u"]), N("Unsqueeze", ["u", "a0"], ["q"]), N("Relu", ["q"], ["Y"])],
        [_f32("X", ["n", 3])], [_f32("Y", [1, 1, "n", 3])], {"a0": [0]},
        _counts(Unsqueeze=2)),
    # dims unknown, but an Unsqueeze and a Squeeze of the same axes cancel, also with a second reader of the
    # Unsqueeze and where the Squeeze writes a graph output (the Relu writes it then)
    "dynamic_pair": (
        [N("Relu", ["X"], ["x"]), N("Unsqueeze", ["x", "a02"], ["u"]), N("Squeeze", ["u", "a02"], ["q"]),
         N("Neg", ["q"], ["Y"]), N("Neg", ["u"], ["Z"]), N("Unsqueeze", ["x", "a0"], ["v"]),
         N("Squeeze", ["v", "a0"], ["W"])],
        [_f32("X", ["n", 3])], [_f32("Y", ["n", 3]), _f32("Z", [1, "n", 1, 3]), _f32("W", ["n", 3])],
        {"a0": [0], "a02": [0, 2]},
        _counts(Unsqueeze=1)),
    # only a unit axis moves: a Reshape, which then merges with the Squeeze after it
    "transpose_unit_axes": (
        [N("Transpose", ["X"], ["t"], perm=[1, 0, 2]), N("Squeeze", ["t", "a0"], ["q"]), N("Relu", ["q"], ["Y"])],
        [_f32("X", [2, 1, 3])], [_f32("Y", [2, 3])], {"a0": [0]},
        _counts(Reshape=1)),
    # a unit axis mixed into a real transpose: Unsqueeze -> Transpose (rank 3) -> Squeeze becomes Transpose (rank 2)
    "transpose_mixed": (
        [N("Unsqueeze", ["X", "a0"], ["u"]), N("Transpose", ["u"], ["t"], perm=[2, 1, 0]),
         N("Squeeze", ["t", "a0"], ["q"]), N("Relu", ["q"], ["Y"])],
        [_f32("X", [2, 3])], [_f32("Y", [3, 2])], {"a0": [1]},
        _counts(Transpose=1)),
    # the converter's output glue: Transpose, then a Reshape whose shape is computed from the Transpose's Shape
    "shape_arithmetic": (
        [N("Transpose", ["X"], ["t"], perm=[1, 0, 2, 3]), N("Shape", ["t"], ["s0"], end=1),
         N("Shape", ["t"], ["s1"], start=1, end=2), N("Shape", ["t"], ["s2"], start=2, end=3),
         N("Shape", ["t"], ["s3"], start=3), N("Mul", ["s1", "s2"], ["m"]),
         N("Concat", ["s0", "m", "s3"], ["c"], axis=0), N("Reshape", ["t", "c"], ["Y"])],
        [_f32("X", [4, 3, 1, 5])], [_f32("Y", [3, 4, 5])], {},
        _counts(Reshape=1, Transpose=1)),
}


@pytest.mark.parametrize("case", CASES)
def test_hand_made(case: str) -> None:
    nodes, inputs, outputs, consts, want = CASES[case]
    model = _model(nodes, inputs, outputs, consts)
    shapes = {i.name: tuple(d.dim_value or 2 for d in i.type.tensor_type.shape.dim) for i in inputs}
    out = _optimised(model, shapes)
    assert _ops(out) == want


def test_transpose_writes_output() -> None:
    """Shape arithmetic folded: the reduced Transpose writes the graph output itself."""
    nodes, inputs, outputs, consts, _ = CASES["shape_arithmetic"]
    out = _optimised(_model(nodes, inputs, outputs, consts), {"X": (4, 3, 1, 5)})
    last = [n for n in out.graph.node if "Y" in n.output]
    assert [n.op_type for n in last] == ["Transpose"]
    assert list(helper.get_attribute_value(last[0].attribute[0])) == [1, 0, 2]


def test_scan_body() -> None:
    """Chains in a Scan body: one collapses to nothing, two end in body outputs (a state, the body's input)."""
    body = helper.make_graph(
        [N("Unsqueeze", ["x", "a0"], ["u"]), N("Reshape", ["u", "s"], ["r"]), N("Squeeze", ["r", "a1"], ["q"]),
         N("Add", ["h", "q"], ["h_new"]),
         N("Unsqueeze", ["h_new", "a0"], ["hu"]), N("Squeeze", ["hu", "a0"], ["y"]),
         N("Unsqueeze", ["x", "a0"], ["xu"]), N("Squeeze", ["xu", "a0"], ["x_out"])],
        "body", [_f32("h", [3]), _f32("x", [3])], [_f32("h_new", [3]), _f32("y", [3]), _f32("x_out", [3])])
    scan = N("Scan", ["H", "X"], ["H_last", "Y", "X_out"], body=body, num_scan_inputs=1)
    model = _model([scan], [_f32("H", [3]), _f32("X", [4, 3])],
                   [_f32("H_last", [3]), _f32("Y", [4, 3]), _f32("X_out", [4, 3])],
                   {"a0": [0], "s": [3, 1], "a1": [1]})
    out = _optimised(model, {"H": (3,), "X": (4, 3)})
    body_out = out.graph.node[0].attribute[0].g
    assert _ops(body_out) == _counts(Identity=2)  # h_new is both a state and a scan output; x is the body's input
