"""A Loop body returning the constant true as its condition returns its condition input instead (always true inside
the body); results stay OpenVINO's, data-dependent conditions are left alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import openvino as ov
import openvino.opset13 as ops

from ir2onnx.verify.onnxruntime_run import run_onnxruntime
from tests.passes.loop_models import body_of, recurrence
from tests.utils import assert_equivalent, convert_checked, rng_inputs, save_ir


def _condition_source(body: onnx.GraphProto) -> str:
    """What the body's condition output is computed from: "input" (the condition input, through an Identity), or the
    op or value it comes from."""
    out = body.output[0].name
    node = next((n for n in body.node if out in n.output), None)
    if node is None:
        return out
    if node.op_type == "Identity" and node.input[0] == body.input[1].name:
        return "input"
    return node.op_type if node.op_type != "Identity" else node.input[0]


def test_constant_condition_returns_the_input(tmp_path: Path) -> None:
    xml = save_ir(recurrence("loop"), tmp_path)
    inputs = rng_inputs([((2, 5, 8), np.float32), ((2, 8), np.float32)])
    assert _condition_source(body_of(assert_equivalent(xml, inputs, fuse=False), "Loop")) == "input"
    assert _condition_source(body_of(assert_equivalent(xml, inputs, fuse=False, optimize=False), "Loop")) != "input"


def test_zero_iterations(tmp_path: Path) -> None:
    """A Loop over an empty axis (trip count 0) returns its initial state and an empty stack. Checked against those
    values: OpenVINO 2026.4's CPU plugin dies compiling this model (floating point exception)."""
    proto = convert_checked(save_ir(recurrence("loop", steps=0), tmp_path), fuse=False)
    assert _condition_source(body_of(proto, "Loop")) == "input"
    h0 = rng_inputs([((2, 8), np.float32)])[0]
    y, h = run_onnxruntime(proto, {"X": np.zeros((2, 0, 8), np.float32), "H0": h0})
    assert y.shape == (2, 0, 8) and y.dtype == np.float32
    np.testing.assert_array_equal(h, h0)


def test_data_dependent_condition_stays(tmp_path: Path) -> None:
    """s' = s + x_t while s' < 3 (a Loop that may stop early): the condition is computed, not replaced."""
    X = ops.parameter([6, 2], np.float32, name="X")
    S0 = ops.parameter([2], np.float32, name="S0")
    bx, bs = ops.parameter([1, 2], np.float32), ops.parameter([2], np.float32)
    s = ops.add(bs, ops.squeeze(bx, [0]))
    cond = ops.reduce_logical_and(ops.less(s, ops.constant(np.float32(3))), ops.constant(np.array([0], np.int64)))
    r_s, r_c = ops.result(s), ops.result(cond)
    loop = ops.loop(ops.constant(np.int64(6)), ops.constant(True))
    loop.set_function(ov.Model([r_s, r_c], [bx, bs]))
    loop.set_special_body_ports([-1, 1])
    loop.set_sliced_input(bx, X.output(0), 0, 1, 1, -1, 0)
    loop.set_merged_input(bs, S0.output(0), r_s.output(0))
    xml = save_ir(ov.Model([loop.get_iter_value(r_s.output(0), -1)], [X, S0]), tmp_path)
    inputs = [np.full((6, 2), 1.0, np.float32), np.zeros(2, np.float32)]
    assert _condition_source(body_of(assert_equivalent(xml, inputs, fuse=False), "Loop")) != "input"
