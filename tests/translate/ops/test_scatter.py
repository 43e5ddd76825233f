"""Scatter family (scatter.py): reductions with duplicate indices, use_init_val, negative indices, SliceScatter."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino.opset3 as ops3
import openvino.opset4 as ops4
import openvino.opset12 as ops12
import openvino.opset15 as ops15
import pytest

from tests.translate.ops.cases import Case, const, params, run_case
from tests.translate.ops.reference import run_against_numpy

F, F16, I32, I64, U8, B = np.float32, np.float16, np.int32, np.int64, np.uint8, np.bool_
RNG = np.random.default_rng(5)

# duplicate and negative indices on axis 1 of a [3, 4] tensor
EL_IDX = np.array([[0, 0, 3, -1], [1, 1, 1, 2], [2, -4, 0, 3]], I64)


def _el_case(reduction: str, init: bool, dtype: type, axis: int = 1) -> Case:
    name = f"scatter-elements-12-{reduction}-{'init' if init else 'noinit'}-{np.dtype(dtype).name}-axis{axis}"
    idx = EL_IDX if axis in (1, -1) else np.array([[0, 2, 0, 0], [-3, 2, 1, 0]], I64)
    return Case(name, lambda d, u: ops12.scatter_elements_update(d, const(idx, I64), u, const(axis, I64), reduction,
                                                                 init),
                [((3, 4), dtype), (idx.shape, dtype)],
                values=[RNG.integers(-6, 7, (3, 4)).astype(dtype), RNG.integers(-6, 7, idx.shape).astype(dtype)])


EL_CASES = [_el_case(r, init, dt) for r in ("none", "sum", "prod", "min", "max", "mean") for init in (True, False)
            for dt in (F, I32)]
EL_CASES += [_el_case(r, False, F, axis=0) for r in ("sum", "mean", "max")]
EL_CASES += [_el_case(r, init, F16) for r in ("sum", "mean", "min") for init in (True, False)]
EL_CASES += [
    Case("scatter-elements-12-mean-float", lambda d, u: ops12.scatter_elements_update(
        d, const(EL_IDX, I64), u, const(-1, I64), "mean", True), [((3, 4), F), ((3, 4), F)]),
    Case("scatter-elements-12-runtime-indices", lambda d, i, u: ops12.scatter_elements_update(
        d, i, u, const(1, I64), "sum", False), [((3, 4), F), ((3, 4), I32), ((3, 4), F)],
         values=[RNG.standard_normal((3, 4)).astype(F), EL_IDX.astype(I32), RNG.standard_normal((3, 4)).astype(F)]),
    Case("scatter-elements-3", lambda d, u: ops3.scatter_elements_update(d, const(EL_IDX[:, :2], I64), u,
                                                                         const(1, I64)), [((3, 4), F), ((3, 2), F)]),
    Case("scatter-elements-12-bool-max", lambda d, u: ops12.scatter_elements_update(
        d, const(EL_IDX, I64), u, const(1, I64), "max", False), [((3, 4), B), ((3, 4), B)]),
]


def _el_runtime_axis(reduction: str, axis: int, dtype: type) -> Case:
    """The axis is a model input (ONNX wants an attribute): an If chain picks the axis at run time."""
    idx = EL_IDX if axis in (1, -1) else np.array([[0, 2, 0, 0], [-3, 2, 1, 0]], I64)
    return Case(f"scatter-elements-12-runtime-axis{axis}-{reduction}-{np.dtype(dtype).name}",
                lambda d, u, a: ops12.scatter_elements_update(d, const(idx, I64), u, a, reduction, False),
                [((3, 4), F), (idx.shape, F), ((), dtype)],
                values=[RNG.integers(-6, 7, (3, 4)).astype(F), RNG.integers(-6, 7, idx.shape).astype(F),
                        np.array(axis, dtype)])


EL_CASES += [_el_runtime_axis(r, a, dt) for r, a, dt in
             [("none", 1, I64), ("sum", -1, I32), ("mean", 0, I64), ("max", -2, I32)]]
EL_CASES += [
    Case("scatter-elements-3-runtime-axis", lambda d, u, a: ops3.scatter_elements_update(
        d, const(EL_IDX[:, :2], I64), u, a), [((3, 4), B), ((3, 2), B), ((1,), I64)],
         values=[RNG.random((3, 4)) > 0.5, RNG.random((3, 2)) > 0.5, np.array([1], I64)]),
]

ND_IDX = np.array([[0, 1], [0, 1], [-1, 2], [2, 2], [0, -1]], I64)


def _nd_case(reduction: str, dtype: type) -> Case:
    return Case(f"scatter-nd-15-{reduction}-{np.dtype(dtype).name}",
                lambda d, u: ops15.scatter_nd_update(d, const(ND_IDX, I64), u, reduction),
                [((3, 4), dtype), ((5,), dtype)],
                values=[RNG.integers(-6, 7, (3, 4)).astype(dtype), RNG.integers(-6, 7, (5,)).astype(dtype)]
                if dtype is not B else [RNG.random((3, 4)) > 0.5, np.array([1, 1, 1, 0, 1], B)])


ND_CASES = [_nd_case(r, dt) for r in ("none", "sum", "sub", "prod", "min", "max") for dt in (F, I32, B)]
ND_CASES += [_nd_case(r, F16) for r in ("sum", "max")]
ND_CASES += [_nd_case(r, U8) for r in ("sum", "sub")]
ND_CASES += [
    Case("scatter-nd-15-slices-sum", lambda d, u: ops15.scatter_nd_update(d, const([[1], [1], [0]], I64), u, "sum"),
         [((3, 4), F), ((3, 4), F)]),
    Case("scatter-nd-4-negative", lambda d, u: ops4.scatter_nd_update(d, const([[-1, 0], [0, 3]], I64), u),
         [((3, 4), F), ((2,), F)]),
]

SLICE_CASES = [
    Case("slice-scatter-step2", lambda d, u: ops15.slice_scatter(d, u, const([1], I64), const([10], I64),
                                                                 const([2], I64), const([1], I64)),
         [((3, 7), F), ((3, 3), F)]),
    Case("slice-scatter-negative-step", lambda d, u: ops15.slice_scatter(d, u, const([-1, 0], I64), const([0, 9], I64),
                                                                         const([-1, 3], I64)),
         [((4, 7), F), ((3, 3), F)]),
]


@pytest.mark.parametrize("case", params(EL_CASES + ND_CASES + SLICE_CASES))
def test_scatter(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)


def test_slice_scatter_runtime_bounds(tmp_path: Path) -> None:
    """Run-time start/stop: OpenVINO's CPU plugin crashes on this IR, so numpy is the reference."""
    case = Case("slice-scatter-runtime", lambda d, u, s, e: ops15.slice_scatter(d, u, s, e, const([1], I32),
                                                                                const([-1], I32)),
                [((2, 3, 5), F), ((2, 3, 2), F), ((1,), I32), ((1,), I32)],
                values=[RNG.standard_normal((2, 3, 5)).astype(F), RNG.standard_normal((2, 3, 2)).astype(F),
                        np.array([2], I32), np.array([4], I32)])

    def expected(d: np.ndarray, u: np.ndarray, s: np.ndarray, e: np.ndarray) -> list[np.ndarray]:
        y = d.copy()
        y[..., s[0]:e[0]] = u
        return [y]

    run_against_numpy(case, tmp_path, expected)
