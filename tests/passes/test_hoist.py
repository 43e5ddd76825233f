"""Loop-invariant nodes leave Loop/Scan bodies (inner loops first); results stay OpenVINO's.

The recurrences here are spelled-out RNN cells, which recurrent fusion would turn into ONNX RNN nodes: fusion is
turned off to look at the loops."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino.opset13 as ops
import pytest

from tests.passes.loop_models import ops_in, recurrence
from tests.utils import assert_equivalent, convert_checked, ov, rng_inputs, save_ir

IN = [((2, 5, 8), np.float32), ((2, 8), np.float32)]


@pytest.mark.parametrize("kind", ["ti", "loop"])
def test_weight_transpose_leaves_the_body(tmp_path: Path, kind: str) -> None:
    xml = save_ir(recurrence(kind), tmp_path)
    plain = convert_checked(xml, optimize=False, fuse=False)
    assert ops_in(plain.graph, "Transpose", bodies=True) == 1  # MatMul(x, W, transpose_b) inside the body
    lean = assert_equivalent(xml, rng_inputs(IN), fuse=False)
    assert ops_in(lean.graph, "Transpose", bodies=True) == 0
    assert ops_in(lean.graph, "Transpose", bodies=False) >= 1


def nested(tmp_path: Path) -> Path:
    """TI over axis 1 of X [2, 3, 4, 8] whose body runs a Loop over axis 1 of its [2, 4, 8] slice; the inner body
    multiplies by W^T (a constant) and adds an outer invariant input scaled by a constant."""
    rng = np.random.default_rng(0)
    X = ops.parameter([2, 3, 4, 8], np.float32, name="X")
    B = ops.parameter([8], np.float32, name="B")
    w = ops.constant((rng.standard_normal((8, 8)) * 0.3).astype(np.float32))
    # inner body: y = x @ W^T + 2 * b_inv
    ix = ops.parameter([2, 1, 8], np.float32)
    ib = ops.parameter([8], np.float32)
    iy = ops.add(ops.matmul(ops.squeeze(ix, [1]), w, False, True), ops.multiply(ib, ops.constant(np.float32(2))))
    ir_y = ops.result(ops.unsqueeze(iy, 1))
    # outer body
    ox = ops.parameter([2, 1, 4, 8], np.float32)
    ob = ops.parameter([8], np.float32)
    inner = ops.loop(ops.constant(np.array(4, np.int64)), ops.constant(np.array(True)))
    inner.set_function(ov.Model([ir_y, ops.result(ops.constant(np.array(True)))], [ix, ib]))
    inner.set_special_body_ports([-1, 1])
    inner.set_sliced_input(ix, ops.squeeze(ox, [1]).output(0), 0, 1, 1, -1, 1)
    inner.set_invariant_input(ib, ob.output(0))
    or_y = ops.result(ops.unsqueeze(inner.get_concatenated_slices(ir_y.output(0), 0, 1, 1, -1, 1), 1))
    outer = ops.tensor_iterator()
    outer.set_body(ov.Model([or_y], [ox, ob]))
    outer.set_sliced_input(ox, X.output(0), 0, 1, 1, -1, 1)
    outer.set_invariant_input(ob, B.output(0))
    return save_ir(ov.Model([outer.get_concatenated_slices(or_y.output(0), 0, 1, 1, -1, 1)], [X, B]), tmp_path)


def test_nested_invariants_leave_both_loops(tmp_path: Path) -> None:
    xml = nested(tmp_path)
    plain = convert_checked(xml, optimize=False, fuse=False)
    lean = assert_equivalent(xml, rng_inputs([((2, 3, 4, 8), np.float32), ((8,), np.float32)]), fuse=False)
    # W^T and 2 * B depend on nothing either loop computes: both are computed once, in the main graph, from the
    # weight and from the input B (the body's other Transpose and Muls move the inner loop's stacked axis and depend
    # on the outer slice)
    weights = {t.name for t in lean.graph.initializer}
    top = [(n.op_type, list(n.input)) for n in lean.graph.node]
    assert any(op == "Transpose" and ins[0] in weights for op, ins in top)
    assert any(op == "Mul" and "B" in ins and set(ins) - {"B"} <= weights for op, ins in top)
    for op in ("Transpose", "Mul"):
        assert ops_in(lean.graph, op, bodies=True) - ops_in(lean.graph, op, bodies=False) \
            < ops_in(plain.graph, op, bodies=True) - ops_in(plain.graph, op, bodies=False), op


@pytest.mark.parametrize("kind", ["ti", "loop"])
def test_invariant_body_output_stays_an_output(tmp_path: Path, kind: str) -> None:
    """A body Result computed from an invariant input only: hoisted, and returned through one Identity."""
    X = ops.parameter([4, 3], np.float32, name="X")
    V = ops.parameter([3], np.float32, name="V")
    bx, bv = ops.parameter([1, 3], np.float32), ops.parameter([3], np.float32)
    inv = ops.relu(ops.multiply(bv, ops.constant(np.float32(3))))
    r_inv, r_y = ops.result(inv), ops.result(ops.add(bx, inv))
    if kind == "ti":
        node = ops.tensor_iterator()
        node.set_body(ov.Model([r_inv, r_y], [bx, bv]))
    else:
        node = ops.loop(ops.constant(np.array(4, np.int64)), ops.constant(np.array(True)))
        node.set_function(ov.Model([r_inv, r_y, ops.result(ops.constant(np.array(True)))], [bx, bv]))
        node.set_special_body_ports([-1, 2])
    node.set_sliced_input(bx, X.output(0), 0, 1, 1, -1, 0)
    node.set_invariant_input(bv, V.output(0))
    model = ov.Model([node.get_iter_value(r_inv.output(0), -1),
                      node.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 0)], [X, V])
    xml = save_ir(model, tmp_path)
    lean = assert_equivalent(xml, rng_inputs([((4, 3), np.float32), ((3,), np.float32)]), fuse=False)
    assert ops_in(lean.graph, "Relu", bodies=True) == 0 and ops_in(lean.graph, "Relu", bodies=False) == 1
