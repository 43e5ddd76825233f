"""An If whose condition the shapes decide is its branch (passes/portable/known_ifs.py): an If on "the input has
rows", over an input of static shape, is the branch it takes (onnx2torch has no If); over a run-time batch it stays.
Results stay OpenVINO's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset13 as ops
import pytest

from tests.utils import assert_equivalent, convert_checked, count_ops, save_ir


def _guarded(batch: int) -> ov.Model:
    """x * 2 if x has rows, else -x."""
    x = ops.parameter([batch, 3], np.float32, name="x")
    rows = ops.gather(ops.shape_of(x), ops.constant(np.int64(0)), ops.constant(np.int64(0)))
    tx, ex = ops.parameter([batch, 3], np.float32), ops.parameter([batch, 3], np.float32)
    then_b = ov.Model([ops.result(ops.multiply(tx, ops.constant(np.float32(2))))], [tx])
    else_b = ov.Model([ops.result(ops.negative(ex))], [ex])
    node = ops.if_op(ops.greater(rows, ops.constant(np.int64(0))).output(0))
    node.set_then_body(then_b)
    node.set_else_body(else_b)
    node.set_input(x.output(0), tx, ex)
    return ov.Model([node.set_output(then_b.get_results()[0], else_b.get_results()[0])], [x])


@pytest.mark.parametrize("batch", [2, -1])
def test_if_on_rows(tmp_path: Path, batch: int) -> None:
    xml = save_ir(_guarded(batch), tmp_path)
    assert count_ops(convert_checked(xml), "If") == 1
    for rows in ([2] if batch > 0 else [2, 0]):  # (over a run-time batch, both branches)
        proto = assert_equivalent(xml, [np.arange(rows * 3, dtype=np.float32).reshape(rows, 3)], portable=True)
        assert count_ops(proto, "If") == (1 if batch < 0 else 0)
