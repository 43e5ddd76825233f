"""Inverse (linalg.py): against OpenVINO and numpy.linalg.inv."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset14 as ops
import pytest

from tests.translate.ops.cases import Case, check_against, params, run_case

F, F16, F64 = np.float32, np.float16, np.float64
RNG = np.random.default_rng(5)


def _mats(shape: tuple[int, ...], dtype: type = F) -> np.ndarray:
    """Well-conditioned matrices that still need row swaps (small diagonal)."""
    n = shape[-1]
    a = RNG.standard_normal(shape) + np.eye(n) * 0.01
    return a.astype(dtype)


PERMUTED = np.array([[0, 0, 1, 0], [2, 0, 0, 0], [0, 0, 0, 3], [0, -1, 0, 0]], F)
CASES = [
    Case("inverse-2x2", lambda a: ops.inverse(a), [((2, 2), F)], values=[_mats((2, 2))], atol=1e-4, rtol=1e-4),
    Case("inverse-batch", lambda a: ops.inverse(a), [((3, 5, 5), F)], values=[_mats((3, 5, 5))], atol=1e-4, rtol=1e-4),
    Case("inverse-batch-2d", lambda a: ops.inverse(a), [((2, 2, 4, 4), F)], values=[_mats((2, 2, 4, 4))],
         atol=1e-4, rtol=1e-4),
    Case("inverse-adjoint", lambda a: ops.inverse(a, adjoint=True), [((2, 3, 3), F)], values=[_mats((2, 3, 3))],
         atol=1e-4, rtol=1e-4),
    Case("inverse-needs-pivoting", lambda a: ops.inverse(a), [((4, 4), F)], values=[PERMUTED]),
    Case("inverse-1x1", lambda a: ops.inverse(a), [((1, 1), F)], values=[np.array([[4.0]], F)]),
    Case("inverse-f16", lambda a: ops.inverse(a), [((3, 3), F16)],
         values=[np.array([[2, 1, 0], [1, 3, 1], [0, 1, 4]], F16)], rtol=1e-3, atol=1e-3),
    Case("inverse-f64", lambda a: ops.inverse(a), [((4, 4), F64)], values=[_mats((4, 4), F64)], rtol=1e-4, atol=1e-4),
    Case("inverse-6x6-numpy", lambda a: ops.inverse(a), [((4, 6, 6), F)], values=[_mats((4, 6, 6))],
         expected=lambda a: [np.linalg.inv(a.astype(F64)).astype(F)], rtol=1e-4, atol=1e-4),
    Case("inverse-20x20-loop", lambda a: ops.inverse(a), [((2, 20, 20), F)], values=[_mats((2, 20, 20))],
         rtol=1e-3, atol=1e-3),
]


@pytest.mark.parametrize("case", params(CASES))
def test_inverse(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)


@pytest.mark.parametrize("n", [3, 8])
def test_inverse_dynamic_size_matches_numpy(tmp_path: Path, n: int) -> None:
    """Unknown n: the elimination runs in an ONNX Loop; compared with numpy.linalg.inv."""
    p = ops.parameter([-1, -1, -1], F, name="a")
    model = ov.Model([ops.inverse(p)], [p])
    a = _mats((2, n, n))
    check_against(model, [a], [np.linalg.inv(a.astype(F64)).astype(F)], tmp_path, rtol=1e-3, atol=1e-4)
