"""The default passes drop dead body nodes and keep the numbers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset13 as ops

from ir2onnx.verify.onnxruntime_run import run_onnxruntime
from tests.translate.control_flow.builders import ti_accumulate
from tests.utils import assert_equivalent, convert_checked, count_ops, rng_inputs, save_ir


def test_dead_body_nodes_removed_and_results_unchanged(tmp_path: Path) -> None:
    # the body computes sigmoid(state) into a Result that no TensorIterator output reads
    xml = save_ir(ti_accumulate([2, 5, 3], 1, 0, -1, 1, 1, last_of_nonstate=False), tmp_path)
    plain = convert_checked(xml, optimize=False)
    optimized = assert_equivalent(xml, rng_inputs([((2, 5, 3), np.float32), ((2, 3), np.float32)]))
    assert count_ops(plain, "Sigmoid") == 1 and count_ops(optimized, "Sigmoid") == 0
    feed = dict(zip([i.name for i in plain.graph.input], rng_inputs([((2, 5, 3), np.float32), ((2, 3), np.float32)])))
    for a, b in zip(run_onnxruntime(plain, feed), run_onnxruntime(optimized, feed)):
        np.testing.assert_array_equal(a, b)
    assert [o.name for o in plain.graph.output] == [o.name for o in optimized.graph.output]


def test_shape_of_a_split_with_run_time_sizes(tmp_path: Path) -> None:
    """ONNX's rotary embedding through OpenVINO: a VariadicSplit whose lengths are computed ([8, 0]) and the shape
    of its first part, which the shape folding took for an equal split ([2, 4] instead of [2, 8])."""
    x = ops.parameter([2, 8], np.float32, name="x")
    width = ops.gather(ops.shape_of(x), ops.constant(np.array([1], np.int64)), ops.constant(np.int64(0)))
    parts = ops.variadic_split(x, ops.constant(np.int64(1)), ops.concat([width, ops.constant(np.array([0],
                                                                                                       np.int64))], 0))
    first = parts.output(0)
    y = ops.reshape(ops.multiply(first, ops.constant(np.float32(2))), ops.shape_of(first), False)
    xml = save_ir(ov.Model([y, ops.shape_of(first)], [x]), tmp_path)
    assert_equivalent(xml, rng_inputs([((2, 8), np.float32)]))
