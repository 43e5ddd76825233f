"""Reductions over a possibly empty axis get non-negative axes and keep them, squeezed after (onnxruntime's CUDA
kernels refuse to drop an empty axis; its 1.31 CPU kernels return an empty input's shape for a negative axis);
models converted for CUDA keep fused RNN/GRU nodes (the CPU-only rewrites are left out). Numbers are compared on
onnxruntime's CPU provider here; tests/translate/control_flow/test_cuda.py runs the fixtures on CUDA."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx_ir as oir
import pytest
from onnx import TensorProto as TP
from onnx import helper as oh

import ir2onnx
from ir2onnx.errors import ConversionError
from ir2onnx.passes.empty_reduce import EmptyReductionsPass
from ir2onnx.verify.onnx_edit import all_nodes
from ir2onnx.verify.onnxruntime_run import run_onnxruntime
from tests.fixture_paths import FIXTURES
from tests.passes.rnn_builders import recurrent_loop
from tests.utils import assert_equivalent, count_ops, save_ir


def _reduce_model(op: str, keepdims: int | None, axes: list[int] | None, shape: list[int | str],
                  opset: int = 18) -> oir.Model:
    ins = ["x"] + (["axes"] if axes is not None else [])
    attrs = {} if keepdims is None else {"keepdims": keepdims}
    inits = [oh.make_tensor("axes", TP.INT64, [len(axes)], axes)] if axes is not None else []
    graph = oh.make_graph([oh.make_node(op, ins, ["y"], **attrs)], "g", [oh.make_tensor_value_info("x", TP.FLOAT, shape)],
                          [oh.make_tensor_value_info("y", TP.FLOAT, None)], initializer=inits)
    return oir.from_proto(oh.make_model(graph, opset_imports=[oh.make_opsetid("", opset)], ir_version=8))


@pytest.mark.parametrize(("op", "axes", "shape", "feed"), [
    ("ReduceSum", [0], ["n", 5], (0, 5)),
    ("ReduceSum", [-1], [3, "n"], (3, 0)),
    ("ReduceProd", [0, 2], ["a", 2, "b"], (0, 2, 4)),
    ("ReduceMean", [1], [2, "n"], (2, 3)),
    ("ReduceSumSquare", None, ["a", "b"], (0, 3)),
])
def test_possibly_empty_axes_are_kept_then_squeezed(op: str, axes: list[int] | None, shape: list[int | str],
                                                    feed: tuple[int, ...]) -> None:
    model = _reduce_model(op, 0, axes, shape)
    x = np.arange(int(np.prod(feed)), dtype=np.float32).reshape(feed) / 7
    reduce = {"ReduceSum": np.sum, "ReduceProd": np.prod, "ReduceMean": np.mean,
              "ReduceSumSquare": lambda a, axis: np.sum(a * a, axis=axis)}[op]
    want = reduce(x, axis=tuple(axes) if axes is not None else None)
    assert EmptyReductionsPass()(model).modified
    assert [n.op_type for n in model.graph] == [op, "Squeeze"]
    reduce = next(iter(model.graph))
    assert reduce.attributes["keepdims"].value == 1
    if axes is None:  # all axes: still none given
        assert len(reduce.inputs) == 1
    else:
        assert min(reduce.inputs[1].const_value.numpy()) >= 0
    assert [o.name for o in model.graph.outputs] == ["y"]
    got = run_onnxruntime(oir.to_proto(model), {"x": x})[0]
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_negative_axes_of_a_possibly_empty_input_become_non_negative() -> None:
    model = _reduce_model("ReduceMax", 1, [-1], [3, "n"])
    x = np.zeros((3, 0), np.float32)
    assert EmptyReductionsPass()(model).modified
    assert [n.op_type for n in model.graph] == ["ReduceMax"]
    assert list(next(iter(model.graph)).inputs[1].const_value.numpy()) == [1]
    assert run_onnxruntime(oir.to_proto(model), {"x": x})[0].shape == (3, 1)


@pytest.mark.parametrize(("keepdims", "axes", "shape"), [
    (0, [1], [2, 3]),  # static, positive
    (1, [0], ["n", 3]),  # keeps it already
    (None, [0], ["n", 3]),  # keepdims defaults to 1
])
def test_other_reductions_are_left_alone(keepdims: int | None, axes: list[int], shape: list[int | str]) -> None:
    model = _reduce_model("ReduceSum", keepdims, axes, shape)
    assert not EmptyReductionsPass()(model).modified
    assert [n.op_type for n in model.graph] == ["ReduceSum"]


def test_loop_summing_an_empty_slice() -> None:
    """TensorFlow's loop over a matrix's columns sums a slice that is empty at some iterations: that ReduceSum keeps
    its axis (then squeezed), and the model equals OpenVINO."""
    d = FIXTURES / "tf_for_loop_columns"
    stored = np.load(d / "inputs.npz")
    proto = assert_equivalent(d / "model.xml", [stored[n] for n in stored.files])
    sums = [n for n in all_nodes(proto.graph) if n.op_type == "ReduceSum"]
    assert sums and all(a.i == 1 for n in sums for a in n.attribute if a.name == "keepdims")


@pytest.mark.parametrize(("kind", "batch", "hidden", "cpu_form"), [
    ("gru", 64, 64, "Scan"),  # batch x hidden >= 4096: a Scan on the CPU (gru_scan.py)
    ("rnn", 2, 8, "Scan"),  # always lowered on the CPU (rnn_scan.py)
])
def test_cuda_keeps_fused_nodes(tmp_path: Path, kind: str, batch: int, hidden: int, cpu_form: str) -> None:
    xml = save_ir(recurrent_loop(kind, batch=batch, steps=6, inputs=8, hidden=hidden, outputs=("seq", "h")), tmp_path)
    rng = np.random.default_rng(3)
    inputs = [rng.standard_normal((batch, 6, 8)).astype(np.float32),
              rng.standard_normal((batch, hidden)).astype(np.float32)]
    cpu = assert_equivalent(xml, inputs, rtol=1e-4, atol=1e-5)
    cuda = assert_equivalent(xml, inputs, rtol=1e-4, atol=1e-5, device="cuda")
    assert count_ops(cpu, cpu_form) == 1 and count_ops(cpu, kind.upper()) == 0
    assert count_ops(cuda, kind.upper()) == 1 and count_ops(cuda, "Scan") == count_ops(cuda, "Loop") == 0


def test_unknown_device_is_refused() -> None:
    with pytest.raises(ConversionError, match="unknown device 'gpu'"):
        ir2onnx.convert(FIXTURES / "tf_for_loop_columns" / "model.xml", device="gpu")


def test_reduction_of_a_constant_node() -> None:
    """The input's shape read through a Constant node (which has no input of its own) is the constant's."""
    graph = oh.make_graph([oh.make_node("Constant", [], ["c"], value=oh.make_tensor("v", TP.FLOAT, [3], [1, 2, 3])),
                           oh.make_node("ReduceSum", ["c", "axes"], ["y"], keepdims=0)], "g", [],
                          [oh.make_tensor_value_info("y", TP.FLOAT, None)],
                          initializer=[oh.make_tensor("axes", TP.INT64, [1], [-1])])
    model = oir.from_proto(oh.make_model(graph, opset_imports=[oh.make_opsetid("", 18)], ir_version=8))
    EmptyReductionsPass()(model)
    assert run_onnxruntime(oir.to_proto(model), {})[0] == 6


def test_attribute_axes_of_older_opsets() -> None:
    """Before opset 18 (ReduceSum: 13) the axes are an attribute; they stay one."""
    graph = oh.make_graph([oh.make_node("ReduceMax", ["x"], ["y"], keepdims=0, axes=[-1])], "g",
                          [oh.make_tensor_value_info("x", TP.FLOAT, [2, "n"])],
                          [oh.make_tensor_value_info("y", TP.FLOAT, None)])
    model = oir.from_proto(oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)], ir_version=8))
    assert EmptyReductionsPass()(model).modified
    reduce = next(iter(model.graph))
    assert len(reduce.inputs) == 1 and list(reduce.attributes["axes"].value) == [1]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(run_onnxruntime(oir.to_proto(model), {"x": x})[0], x.max(axis=1))
