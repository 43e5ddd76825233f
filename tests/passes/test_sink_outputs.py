"""Per-step work that only feeds a stacked loop output runs once, after the loop, on the stacked tensor.

Fusion is off here, to look at the loops (tests/passes/recurrent/test_fuse.py checks that cells left alone are fused)."""

from __future__ import annotations

import collections
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnx_ir as oir
import openvino as ov
import openvino.opset13 as ops
import pytest
from onnx import TensorProto, helper, numpy_helper

from ir2onnx.passes.sink_outputs import SinkStepOutputsPass
from ir2onnx.verify.onnxruntime_run import run_onnxruntime
from tests.passes.loop_models import body_of, ops_in, recurrence
from tests.utils import assert_equivalent, rng_inputs, save_ir

IN = [((2, 5, 8), np.float32), ((2, 8), np.float32)]
_rng = np.random.default_rng(3)


def _c(*shape: int) -> Any:
    return ops.constant((_rng.standard_normal(shape) * 0.5).astype(np.float32))


Output = Callable[[Any, Any], Any]
MOVED: list[tuple[str, Output, list[str]]] = [
    ("projection", lambda h, _: ops.tanh(ops.add(ops.matmul(h, _c(8, 3), False, False), _c(3))), ["MatMul", "Tanh"]),
    ("softmax", lambda h, _: ops.softmax(ops.multiply(h, _c(1, 8)), -1), ["Softmax", "Mul"]),
    ("transpose", lambda h, _: ops.relu(ops.transpose(ops.unsqueeze(h, 2), [1, 0, 2])), ["Relu", "Transpose"]),
    ("reshape", lambda h, _: ops.sigmoid(ops.reshape(h, ops.constant(np.array([2, 2, 4], np.int64)), False)),
     ["Sigmoid"]),
]


def _body_ops(proto: Any, kind: str) -> collections.Counter[str]:
    return collections.Counter(n.op_type for n in body_of(proto, "Scan" if kind == "ti" else "Loop").node)


@pytest.mark.parametrize("kind", ["ti", "loop"])
@pytest.mark.parametrize("label,output,moved", MOVED, ids=[m[0] for m in MOVED])
def test_output_work_leaves_the_loop(tmp_path: Path, kind: str, label: str, output: Output,
                                     moved: list[str]) -> None:
    """The body keeps what it has without the output work (the recurrence); the work runs once after the loop."""
    xml = save_ir(recurrence(kind, output=output, reverse=kind == "ti"), tmp_path / "with")
    lean = assert_equivalent(xml, rng_inputs(IN), fuse=False)
    plain = assert_equivalent(xml, rng_inputs(IN), fuse=False, optimize=False)
    without = save_ir(recurrence(kind, reverse=kind == "ti"), tmp_path / "without")
    bare = assert_equivalent(without, rng_inputs(IN), fuse=False)
    bare_plain = assert_equivalent(without, rng_inputs(IN), fuse=False, optimize=False)
    assert _body_ops(lean, kind) == _body_ops(bare, kind)
    for op in moved:  # the main graph gains the output's ops (and a Transpose: the TI stacks on axis 1, not 0; and
        # where the shapes after the moved work are no longer static, the shape arithmetic of the stacked axis's merge)
        gained = ops_in(lean.graph, op, bodies=False) - ops_in(bare.graph, op, bodies=False)
        expected = ops_in(plain.graph, op, bodies=True) - ops_in(bare_plain.graph, op, bodies=True)
        assert gained >= expected + (op == "Transpose" and kind == "ti") and expected > 0, op


STAYS: list[tuple[str, Output, str]] = [
    ("two per-step operands", lambda h, h_prev: ops.multiply(h, h_prev), "Mul"),
    ("reshapes only", lambda h, _: ops.reshape(h, ops.constant(np.array([2, 2, 4], np.int64)), False), "Reshape"),
]


@pytest.mark.parametrize("label,output,op", STAYS, ids=[s[0] for s in STAYS])
def test_nothing_to_move(tmp_path: Path, label: str, output: Output, op: str) -> None:
    xml = save_ir(recurrence("ti", output=output), tmp_path)
    lean = assert_equivalent(xml, rng_inputs(IN), fuse=False)
    assert ops_in(lean.graph, op, bodies=True) == 1


def test_work_after_the_previous_state_moves(tmp_path: Path) -> None:
    """y_t = tanh(h_{t-1} @ V): the body stacks h_{t-1} @ V (h_{t-1} itself is a body input, not at hand stacked)
    and the Tanh runs after the loop."""
    xml = save_ir(recurrence("ti", output=lambda _, h_prev: ops.tanh(ops.matmul(h_prev, _c(8, 3), False, False))),
                  tmp_path)
    lean = assert_equivalent(xml, rng_inputs(IN), fuse=False)
    assert ops_in(lean.graph, "Tanh", bodies=False) == 1 and ops_in(lean.graph, "MatMul", bodies=True) == 2


def test_a_higher_rank_operand_keeps_its_op_and_what_precedes_it(tmp_path: Path) -> None:
    """h + c with c [3, 1, 1] makes a [3, B, H] step: that Add cannot take the stacked value; the Relu after it can."""
    xml = save_ir(recurrence("ti", output=lambda h, _: ops.relu(ops.add(ops.tanh(h), _c(3, 1, 1)))), tmp_path)
    lean = assert_equivalent(xml, rng_inputs(IN), fuse=False)
    assert ops_in(lean.graph, "Relu", bodies=False) == 1 and ops_in(lean.graph, "Add", bodies=True) >= 1


@pytest.mark.parametrize("trip", [0, 1, 3])
def test_loop_with_a_run_time_trip_count_zero_included(tmp_path: Path, trip: int) -> None:
    """Loop-5 stacking tanh(s @ V) + 1 of its state s: the work moves after the loop, also when it runs no
    iteration (the stacked tensor is then empty)."""
    X = ops.parameter([2, 3], np.float32, name="X")
    T = ops.parameter([], np.int64, name="trip")
    bx, bs = ops.parameter([2, 3], np.float32), ops.parameter([2, 3], np.float32)
    s = ops.add(bs, ops.tanh(bx))
    y = ops.add(ops.tanh(ops.matmul(s, _c(3, 4), False, False)), ops.constant(np.float32(1)))
    r_c, r_s, r_y = ops.result(ops.constant(True)), ops.result(s), ops.result(ops.unsqueeze(y, 0))
    loop = ops.loop(T, ops.constant(True))
    loop.set_function(ov.Model([r_c, r_s, r_y], [bx, bs]))
    loop.set_special_body_ports([-1, 0])
    loop.set_invariant_input(bx, X.output(0))
    loop.set_merged_input(bs, X.output(0), r_s.output(0))
    model = ov.Model([loop.get_iter_value(r_s.output(0), -1),
                      loop.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 0)], [X, T])
    inputs = [np.arange(6, dtype=np.float32).reshape(2, 3) / 10, np.array(trip, np.int64)]
    lean = assert_equivalent(save_ir(model, tmp_path), inputs, fuse=False)
    assert ops_in(lean.graph, "MatMul", bodies=True) == 0 and ops_in(lean.graph, "MatMul", bodies=False) == 1


def _scan_model(const_in_body: bool) -> onnx.ModelProto:
    """Scan over x [T, 2, 3]: h' = tanh(h + x_t), y_t = h' * c (c a Constant node of the body, or an initializer of
    the main graph); outputs the last h and y stacked on axis 1."""
    c = numpy_helper.from_array(np.array([0.5, -1.0, 2.0], np.float32), "c")
    body_nodes = [helper.make_node("Add", ["h", "x_t"], ["s"]), helper.make_node("Tanh", ["s"], ["h2"]),
                  helper.make_node("Mul", ["h2", "c"], ["y"])]
    if const_in_body:
        body_nodes.insert(0, helper.make_node("Constant", [], ["c"], value=c))
    vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in ("h", "x_t", "h2", "y")]
    body = helper.make_graph(body_nodes, "body", vi[:2], vi[2:])
    scan = helper.make_node("Scan", ["h0", "x"], ["h_last", "ys"], body=body, num_scan_inputs=1,
                            scan_output_axes=[1])
    graph = helper.make_graph([scan], "g", [helper.make_tensor_value_info("h0", TensorProto.FLOAT, [2, 3]),
                                            helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 2, 3])],
                              [helper.make_tensor_value_info("h_last", TensorProto.FLOAT, [2, 3]),
                               helper.make_tensor_value_info("ys", TensorProto.FLOAT, [2, 4, 3])],
                              [] if const_in_body else [c])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("const_in_body", [False, True])
def test_onnx_scan_output_axis_and_body_constants(const_in_body: bool) -> None:
    """The pass alone on an ONNX Scan: the Mul moves out (a Transpose puts the stacked axis at 1) when its constant
    is visible outside the body; a Constant of the body keeps it in. Results bit-identical either way."""
    proto = _scan_model(const_in_body)
    m = oir.serde.deserialize_model(proto)
    SinkStepOutputsPass()(m)
    out = oir.to_proto(m)
    onnx.checker.check_model(out, full_check=True)
    assert ops_in(out.graph, "Mul", bodies=False) == (0 if const_in_body else 1)
    feed = {"h0": np.full((2, 3), 0.1, np.float32), "x": _rng.standard_normal((4, 2, 3)).astype(np.float32)}
    for got, want in zip(run_onnxruntime(out, feed), run_onnxruntime(proto, feed), strict=True):
        np.testing.assert_array_equal(got, want)
    assert [o.name for o in out.graph.output] == ["h_last", "ys"]
