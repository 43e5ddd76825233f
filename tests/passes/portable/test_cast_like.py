"""CastLike as Cast (passes/portable/cast_like.py): HardSigmoid's bounds, which the translation casts to the input's
type with CastLike, are Casts in the portable model; results stay OpenVINO's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset13 as ops
import pytest

from ir2onnx.verify.openvino_ref import run_openvino
from tests.passes.portable.consumers import assert_read_by
from tests.utils import assert_equivalent, convert_checked, count_ops, rng_inputs, save_ir


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_hard_sigmoid_bounds_are_casts(tmp_path: Path, dtype: type) -> None:
    x = ops.parameter([2, 6], dtype, name="x")
    alpha, beta = ops.constant(np.array(0.3, dtype)), ops.constant(np.array(0.4, dtype))
    xml = save_ir(ov.Model([ops.hard_sigmoid(x, alpha, beta)], [x]), tmp_path)
    assert count_ops(convert_checked(xml), "CastLike") == 2  # what the pass rewrites is there without it
    inputs = [(rng_inputs([((2, 6), np.float32)])[0] * 4).astype(dtype)]
    proto = assert_equivalent(xml, inputs, portable=True)
    assert count_ops(proto, "CastLike") == 0 and count_ops(proto, "Cast") >= 2
    assert_read_by(["openvino", "reference"], proto, {"x": inputs[0]}, run_openvino(str(xml), inputs), tmp_path)
