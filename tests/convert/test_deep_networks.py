"""Networks deeper than Python's recursion limit (a chain of thousands of layers) convert, and equal OpenVINO."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.utils import check_model

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset13")


def test_chain_of_2000_layers(tmp_path: Path) -> None:
    x = ops.parameter([2, 8], np.float32, name="x")
    y = x
    for i in range(650):
        y = ops.tanh(ops.add(ops.multiply(y, ops.constant(np.float32(1.01))),
                             ops.constant(np.full(8, 0.01 * (i % 7), np.float32))))
    y = ops.mvn(y, ops.constant(np.array([-1], np.int64)), True, 1e-5, "inside_sqrt")  # reductions over the chain
    y = ops.reduce_mean(y, ops.constant(np.array([1], np.int64)), False)
    model = ov.Model([y], [x], "deep")
    assert len(model.get_ops()) > 2000
    check_model(model, [np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32)], tmp_path)
