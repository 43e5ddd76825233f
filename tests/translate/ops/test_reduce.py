"""Reductions (reduce.py): keep_dims, negative axes, run-time axes (opset 18 for all but ReduceSum)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino.opset13 as ops
import pytest

from tests.translate.ops.cases import Case, params, run_case

F, I64 = np.float32, np.int64
REDUCERS = {"sum": ops.reduce_sum, "mean": ops.reduce_mean, "max": ops.reduce_max, "min": ops.reduce_min,
            "prod": ops.reduce_prod}

CASES = [
    Case(f"{name}-{axes}-keep{keep}", lambda a, fn=fn, axes=axes, keep=keep: fn(a, axes, keep), [((2, 3, 4), F)],
         opset=opset)
    for name, fn in REDUCERS.items()
    for axes, keep in (([1], False), ([0, 2], True), ([-1], False))
    for opset in (17, 18)
]
CASES += [
    Case("l1", lambda a: ops.reduce_l1(a, [1], True), [((2, 3, 4), F)]),
    Case("l2", lambda a: ops.reduce_l2(a, [0, 2], False), [((2, 3, 4), F)]),
    Case("logical-and", lambda a: ops.reduce_logical_and(a, [1], False), [((2, 3), np.bool_)]),
    Case("logical-or", lambda a: ops.reduce_logical_or(a, [0], True), [((2, 3), np.bool_)]),
    Case("sum-runtime-axes", lambda a, ax: ops.reduce_sum(a, ax, False), [((2, 3, 4), F), ((1,), I64)],
         values=[np.ones((2, 3, 4), F), np.array([1], I64)]),
    Case("mean-runtime-axes-18", lambda a, ax: ops.reduce_mean(a, ax, True), [((2, 3, 4), F), ((2,), I64)],
         values=[np.arange(24, dtype=F).reshape(2, 3, 4), np.array([0, -1], I64)], opset=18),
]


@pytest.mark.parametrize("case", params(CASES))
def test_reduce(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)


U64 = np.uint64
U64_SMALL = np.arange(24, dtype=U64).reshape(2, 3, 4) % 7
# beyond 2^31 OpenVINO's CPU plugin computes 64-bit reductions wrongly (in 32 bits through f32): numpy is the judge
U64_BIG = np.array([[2**64 - 1, 2, 2**63 + 5], [2**40 + 3, 2**33, 7]], U64)


def _u64_mean(a: np.ndarray, axis: int) -> np.ndarray:
    """The exact mean, truncated (the values' sum, not the sum wrapped modulo 2^64)."""
    return (np.sum(a.astype(object), axis=axis) // a.shape[axis]).astype(U64)


U64_CASES = [
    Case(f"u64-{name}-{axes}-keep{keep}", lambda a, fn=fn, axes=axes, keep=keep: fn(a, axes, keep),
         [((2, 3, 4), U64)], values=[U64_SMALL], opset=18)
    for name, fn in {**REDUCERS, "l1": ops.reduce_l1}.items()
    for axes, keep in (([1], False), ([0, 2], True))
] + [
    Case("u64-sum-runtime-axes", lambda a, ax: ops.reduce_sum(a, ax, False), [((2, 3, 4), U64), ((1,), I64)],
         values=[U64_SMALL, np.array([-1], I64)]),
    Case("u64-sum-wraps", lambda a: ops.reduce_sum(a, [1], False), [((2, 3), U64)], values=[U64_BIG],
         expected=lambda a: [np.sum(a, axis=1, dtype=U64)]),
    Case("u64-l1-wraps", lambda a: ops.reduce_l1(a, [0], True), [((2, 3), U64)], values=[U64_BIG],
         expected=lambda a: [np.sum(a, axis=0, dtype=U64, keepdims=True)]),
    Case("u64-mean-big", lambda a: ops.reduce_mean(a, [1], False), [((2, 3), U64)], values=[U64_BIG],
         expected=lambda a: [_u64_mean(a, 1)]),
    Case("u64-prod-big", lambda a: ops.reduce_prod(a, [1], False), [((2, 3), U64)],
         values=[np.array([[2**20, 2**21, 3], [2**31 + 1, 5, 2**10]], U64)],
         expected=lambda a: [np.prod(a, axis=1, dtype=U64)]),
]


@pytest.mark.parametrize("case", params(U64_CASES))
def test_reduce_u64(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)
