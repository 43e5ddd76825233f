"""Cases where OpenVINO's CPU plugin cannot run (or miscomputes) an IR: the conversion is checked against numpy."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov
import openvino.opset13 as ops

import ir2onnx
from ir2onnx.verify.onnxruntime_run import run_onnxruntime
from tests.translate.ops.cases import Case
from tests.utils import save_ir


def run_against_numpy(case: Case, tmp_path: Path, expected: Callable[..., Sequence[np.ndarray]]) -> None:
    """Build the case's IR, convert it, run onnxruntime and compare every output with `expected(*values)`."""
    assert case.values is not None
    ps = [ops.parameter(list(shape), dtype, name=f"in{i}") for i, (shape, dtype) in enumerate(case.inputs)]
    outs = case.build(*ps)
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    results: list[Any] = []
    for o in outs:
        results.extend(o.outputs() if isinstance(o, ov.Node) else [o])
    proto = ir2onnx.convert(save_ir(ov.Model(results, ps), tmp_path))
    got = run_onnxruntime(proto, {f"in{i}": v for i, v in enumerate(case.values)})
    want = expected(*case.values)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, f"{g.dtype}{g.shape} != {w.dtype}{w.shape}"
        if w.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=case.rtol, atol=case.atol)
