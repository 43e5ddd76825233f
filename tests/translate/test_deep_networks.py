"""Networks deeper than Python's recursion limit (a chain of thousands of layers) convert, optimised, and equal
OpenVINO."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from tests.utils import check_model

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset13")


@pytest.mark.parametrize("batch", [2, -1], ids=["static", "run-time batch"])
def test_chain_of_2000_layers(tmp_path: Path, caplog: pytest.LogCaptureFixture, batch: int) -> None:
    x = ops.parameter([batch, 8], np.float32, name="x")
    y = x
    for i in range(650):
        y = ops.tanh(ops.add(ops.multiply(y, ops.constant(np.float32(1.01))),
                             ops.constant(np.full(8, 0.01 * (i % 7), np.float32))))
    # a Reshape chain and reductions (MVN): the passes read their shapes, derived along the whole chain
    y = ops.reshape(y, ops.constant(np.array([-1, 2, 4], np.int64)), False)
    y = ops.transpose(y, ops.constant(np.array([0, 2, 1], np.int64)))
    y = ops.reshape(y, ops.constant(np.array([-1, 8], np.int64)), False)
    y = ops.mvn(y, ops.constant(np.array([-1], np.int64)), True, 1e-5, "inside_sqrt")
    y = ops.reduce_mean(y, ops.constant(np.array([1], np.int64)), False)
    model = ov.Model([y], [x], "deep")
    assert len(model.get_ops()) > 2000
    with caplog.at_level(logging.WARNING, logger="ir2onnx"):
        check_model(model, [np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32)], tmp_path)
    assert not [r for r in caplog.records if "passes failed" in r.getMessage()]  # optimised, not the fallback
