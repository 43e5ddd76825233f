"""Inputs that ONNX takes as attributes or tensors, given at run time (a model input) instead of as constants.

Left out because OpenVINO's CPU plugin cannot run them: a run-time Gather axis, Unsqueeze with run-time axes and
reductions with run-time axes and keep_dims=false (dynamic rank), empty run-time reduction axes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino.opset13 as ops
import pytest

from tests.translate.ops.cases import Case, params, run_case

F, I32, I64 = np.float32, np.int32, np.int64
RNG = np.random.default_rng(11)


def x(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(F)


def v(values: list[int] | int, dtype: type = I64) -> np.ndarray:
    return np.asarray(values, dtype=dtype)


CASES = [
    *[Case(f"transpose-perm-{''.join(map(str, p))}", lambda d, pm: ops.transpose(d, pm), [((2, 3, 4), F), ((3,), I64)],
           values=[x(2, 3, 4), v(p)]) for p in ([2, 0, 1], [0, 1, 2], [1, 0, 2])],
    Case("transpose-perm-4d-i32", lambda d, pm: ops.transpose(d, pm), [((2, 1, 3, 2), F), ((4,), I32)],
         values=[x(2, 1, 3, 2), v([3, 1, 0, 2], I32)]),
    Case("transpose-perm-ints", lambda d, pm: ops.transpose(d, pm), [((3, 4), I32), ((2,), I64)],
         values=[v([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]], I32), v([1, 0])]),
    *[Case(f"split-axis-{a}", lambda d, ax: ops.split(d, ax, 2).outputs(), [((4, 6), F), ((), I64)],
           values=[x(4, 6), v(a)]) for a in (0, 1, -2)],
    *[Case(f"mvn-axes-{'-'.join(map(str, a))}", lambda d, ax: ops.mvn(d, ax, True, 1e-6, "inside_sqrt"),
           [((2, 3, 4), F), ((len(a),), I64)], values=[x(2, 3, 4), v(a)]) for a in ([2], [1, 2], [-1])],
    Case("normalize-l2-axes", lambda d, ax: ops.normalize_l2(d, ax, 1e-6, "add"), [((2, 3, 4), F), ((1,), I64)],
         values=[x(2, 3, 4), v([1])]),
    Case("reduce-mean-axes", lambda d, ax: ops.reduce_mean(d, ax, True), [((2, 3, 4), F), ((2,), I64)],
         values=[x(2, 3, 4), v([0, 2])]),
    Case("tile-repeats", lambda d, r: ops.tile(d, r), [((2, 3), F), ((3,), I64)], values=[x(2, 3), v([2, 1, 3])]),
    Case("broadcast-shape", lambda d, s: ops.broadcast(d, s), [((3, 1), F), ((3,), I64)],
         values=[x(3, 1), v([2, 3, 4])]),
    Case("topk-k", lambda d, k: ops.topk(d, k, 1, "max", "value").outputs(), [((3, 6), F), ((), I64)],
         values=[x(3, 6), v(4)]),
    Case("one-hot-depth", lambda i, dp: ops.one_hot(i, dp, ops.constant(np.float32(1)), ops.constant(np.float32(0)), -1),
         [((4,), I64), ((), I64)], values=[v([0, 3, 1, 5]), v(5)]),
    Case("range", lambda a, b, c: ops.range(a, b, c, "f32"), [((), F), ((), F), ((), F)],
         values=[np.array(1, F), np.array(4, F), np.array(0.5, F)]),
    Case("slice-all-runtime", lambda d, s, e, st, ax: ops.slice(d, s, e, st, ax),
         [((5, 6), F), ((1,), I64), ((1,), I64), ((1,), I64), ((1,), I64)],
         values=[x(5, 6), v([4]), v([0]), v([-2]), v([1])]),
    Case("reshape-shape", lambda d, s: ops.reshape(d, s, True), [((2, 3, 4), F), ((2,), I64)],
         values=[x(2, 3, 4), v([0, -1])]),
    Case("squeeze-axes", lambda d, a: ops.squeeze(d, a), [((2, 1, 3, 1), F), ((1,), I64)],
         values=[x(2, 1, 3, 1), v([-1])]),
    Case("pad-constant-runtime", lambda d, pb, pe, c: ops.pad(d, pb, pe, "constant", c),
         [((2, 3), F), ((2,), I64), ((2,), I64), ((), F)], values=[x(2, 3), v([1, 0]), v([0, 2]), np.array(7, F)]),
    Case("cumsum-axis", lambda d, a: ops.cumsum(d, a), [((3, 4), F), ((), I64)], values=[x(3, 4), v(1)]),
]


@pytest.mark.parametrize("case", params(CASES))
def test_runtime_inputs(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)
