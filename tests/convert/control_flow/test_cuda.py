"""The converted TensorIterator/Loop models on onnxruntime's CUDA execution provider."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ir2onnx.check.compare import compare_output
from ir2onnx.check.onnxruntime_run import cuda_available, run_onnxruntime
from ir2onnx.check.openvino_ref import run_openvino
from tests.convert.control_flow.builders import loop_model, ti_accumulate
from tests.utils import convert_checked, rng_inputs, save_ir

pytestmark = pytest.mark.skipif(not cuda_available(), reason="onnxruntime's CUDA execution provider is not available "
                                "(needs onnxruntime-gpu and an NVIDIA GPU)")


@pytest.mark.parametrize("case", ["ti", "loop"])
def test_cuda_matches_openvino(tmp_path: Path, case: str) -> None:
    if case == "ti":
        model = ti_accumulate([2, 6, 3], 1, -1, 0, -1, 1)
        inputs = rng_inputs([((2, 6, 3), np.float32), ((2, 3), np.float32)])
    else:
        model = loop_model(-1, True, body_cond="data", limit=8.0)
        inputs = [np.arange(6, dtype=np.float32).reshape(2, 3) / 10]
    xml = save_ir(model, tmp_path)
    proto = convert_checked(xml)
    names = [i.name for i in proto.graph.input]
    got = run_onnxruntime(proto, dict(zip(names, inputs)), device="cuda")
    ref = run_openvino(str(xml), inputs)
    for out, g, r in zip(proto.graph.output, got, ref):
        c = compare_output(out.name, g, r, rtol=1e-4, atol=1e-5)
        assert c.passed, c
