"""MVN-1, GroupNormalization, LRN (normalization.py) against OpenVINO."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset1 as ops1
import openvino.opset2 as ops2
import openvino.opset12 as ops12
import pytest

from ir2onnx.verify.onnxruntime_run import run_onnxruntime
from tests.translate.ops.cases import Case, const, params, run_case
from tests.utils import convert_checked, save_ir

F, F16, I64 = np.float32, np.float16, np.int64
RNG = np.random.default_rng(5)


def vec(n: int):  # type: ignore[no-untyped-def]
    return const(RNG.standard_normal(n))


CASES = [
    Case(f"mvn1-{'across' if ac else 'per-channel'}-{'var' if nv else 'mean'}-{len(shape)}d",
         lambda x, ac=ac, nv=nv: ops2.mvn(x, ac, nv, 0.05), [(shape, F)], rtol=1e-4, atol=1e-5)
    for ac in (False, True) for nv in (False, True) for shape in ((2, 3, 4, 5), (2, 3, 7), (1, 2, 3, 2, 2))
]
CASES += [
    Case("group-norm", lambda x: ops12.group_normalization(x, vec(6), vec(6), 3, 1e-5), [((2, 6, 4, 5), F)],
         rtol=1e-4, atol=1e-5),
    Case("group-norm-1-group-3d", lambda x: ops12.group_normalization(x, vec(4), vec(4), 1, 1e-3), [((2, 4, 7), F)],
         rtol=1e-4, atol=1e-5),
    Case("group-norm-per-channel-5d", lambda x: ops12.group_normalization(x, vec(4), vec(4), 4, 1e-2),
         [((1, 4, 2, 3, 2), F)], rtol=1e-4, atol=1e-5),
    Case("group-norm-runtime-scale-dynamic", lambda x, s, bb: ops12.group_normalization(x, s, bb, 2, 1e-5),
         [((-1, 4, -1, -1), F), ((4,), F), ((4,), F)],
         values=[RNG.standard_normal((2, 4, 3, 5)).astype(F), RNG.standard_normal(4).astype(F),
                 RNG.standard_normal(4).astype(F)], rtol=1e-4, atol=1e-5),
]
for axes in ([1], [2, 3]):  # OpenVINO's CPU plugin runs channel-only and all-spatial LRN only
    for size in (1, 2, 3, 4, 5):
        CASES.append(Case(f"lrn-axes{''.join(map(str, axes))}-size{size}",
                          lambda x, a=axes, s=size: ops1.lrn(x, const(a, I64), 0.5, 0.75, 2.0, s),
                          [((2, 6, 5, 5), F)], rtol=1e-5, atol=1e-5))
CASES += [
    Case("lrn-3d-channels", lambda x: ops1.lrn(x, const([1], I64), 1e-4, 0.75, 1.0, 5), [((2, 7, 4), F)]),
    Case("lrn-5d-spatial", lambda x: ops1.lrn(x, const([2, 3, 4], I64), 0.1, 0.5, 1.0, 3), [((1, 2, 3, 4, 5), F)]),
    Case("lrn-dynamic", lambda x: ops1.lrn(x, const([1], I64), 0.3, 0.6, 2.0, 4), [((-1, 6, -1, -1), F)],
         values=[RNG.standard_normal((2, 6, 3, 3)).astype(F)]),
]


@pytest.mark.parametrize("case", params(CASES))
def test_normalization(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)


def _np_lrn(x: np.ndarray, axes: list[int], alpha: float, beta: float, bias: float, size: int) -> np.ndarray:
    """OpenVINO's specification: a window of (size-1)//2 on each side along every axis, alpha / size^n."""
    half = (size - 1) // 2
    sq = np.pad(x.astype(np.float64) ** 2, [(half, half) if a in axes else (0, 0) for a in range(x.ndim)])
    total = np.zeros(x.shape)
    for off in itertools.product(*[range(2 * half + 1) if a in axes else [0] for a in range(x.ndim)]):
        total += sq[tuple(slice(o, o + n) for o, n in zip(off, x.shape))]
    return x / (bias + alpha / size ** len(axes) * total) ** beta


@pytest.mark.parametrize("axes,bias,size", [([1], 1.5, 3), ([1], 0.5, 4), ([2, 3], 2.5, 3), ([3], 1.0, 3),
                                            ([1, 2], 1.0, 2)])
def test_lrn_against_numpy(tmp_path: Path, axes: list[int], bias: float, size: int) -> None:
    """OpenVINO's CPU plugin truncates a fractional bias to an integer (bias=1.5 computes as 1), and cannot run
    LRN over one spatial axis or over channels and space together; the specification is checked with numpy."""
    x = RNG.standard_normal((2, 6, 4, 5)).astype(F)
    p = ops1.parameter([2, 6, 4, 5], F, name="x")
    proto = convert_checked(save_ir(ov.Model([ops1.lrn(p, const(axes, I64), 0.5, 0.75, bias, size)], [p]), tmp_path))
    got = run_onnxruntime(proto, {"x": x})[0]
    np.testing.assert_allclose(got, _np_lrn(x, axes, 0.5, 0.75, bias, size), rtol=1e-5, atol=1e-6)
