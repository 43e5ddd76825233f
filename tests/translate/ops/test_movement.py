"""Reverse-1 (hand-written IR: the Python API has no Reverse) and Roll-7 (movement.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino.opset7 as ops7
import pytest

from tests.translate.ops.cases import Case, const, params, run_case
from tests.translate.ops.handmade import Input, write_layer_ir
from tests.translate.ops.reference import run_against_numpy
from tests.utils import assert_equivalent

F, I32, I64, B = np.float32, np.int32, np.int64, np.bool_
RNG = np.random.default_rng(7)
SHAPE = (2, 3, 4)

# (id, mode, axes input: constant value or a run-time value, run-time?)
REVERSE = [
    ("index-one", "index", np.array([1], I64), False),
    ("index-two-negative", "index", np.array([-1, 0], I64), False),
    ("index-repeated", "index", np.array([2, -1, 0], I32), False),
    ("mask", "mask", np.array([True, False, True]), False),
    ("mask-none", "mask", np.array([False, False, False]), False),
    ("index-runtime", "index", np.array([2, 0], I64), True),
    ("index-runtime-repeated", "index", np.array([-2, 1, 1], I32), True),
    ("mask-runtime", "mask", np.array([False, True, True]), True),
]


@pytest.mark.parametrize("mode,axes,runtime", [pytest.param(m, a, r, id=f"reverse-{n}") for n, m, a, r in REVERSE])
def test_reverse(tmp_path: Path, mode: str, axes: np.ndarray, runtime: bool) -> None:
    x = RNG.standard_normal(SHAPE).astype(F)
    xml = write_layer_ir(tmp_path, "Reverse", "opset1", {"mode": mode},
                         [Input(SHAPE, F), Input(axes.shape, axes.dtype.type, None if runtime else axes)],
                         [(SHAPE, F)])
    assert_equivalent(xml, [x, axes] if runtime else [x])


ROLL = [
    Case("roll-scalar", lambda x: ops7.roll(x, const(2, I64), const(1, I64)), [(SHAPE, F)]),
    Case("roll-negative-shift-axis", lambda x: ops7.roll(x, const([-5, 7], I32), const([-1, 0], I32)), [(SHAPE, F)]),
    Case("roll-repeated-axis", lambda x: ops7.roll(x, const([1, 2, -4], I64), const([2, 2, 1], I64)), [(SHAPE, F)]),
    Case("roll-zero", lambda x: ops7.roll(x, const([4, 0], I64), const([2, 1], I64)), [(SHAPE, F)]),
    Case("roll-runtime-shift", lambda x, s: ops7.roll(x, s, const([0, 2, 2], I64)), [(SHAPE, F), ((3,), I64)],
         values=[RNG.standard_normal(SHAPE).astype(F), np.array([3, -9, 2], I64)]),
    Case("roll-runtime-axes", lambda x, s, a: ops7.roll(x, s, a), [(SHAPE, F), ((3,), I64), ((3,), I64)],
         values=[RNG.standard_normal(SHAPE).astype(F), np.array([3, 1, 5], I64), np.array([-1, 1, 2], I64)]),
    Case("roll-dynamic-dims", lambda x: ops7.roll(x, const([3, -2], I64), const([0, 1], I64)), [((-1, -1), F)],
         values=[RNG.standard_normal((5, 3)).astype(F)]),
]


@pytest.mark.parametrize("case", params(ROLL))
def test_roll(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)


def test_reverse_runtime_empty_axes(tmp_path: Path) -> None:
    """An empty run-time axes list reverses nothing. OpenVINO's CPU plugin reverses every axis instead (and refuses
    the IR when the empty list is a constant), so numpy is the reference."""
    import ir2onnx
    from ir2onnx.verify.onnxruntime_run import run_onnxruntime

    x = RNG.standard_normal(SHAPE).astype(F)
    axes = np.zeros((0,), I64)
    xml = write_layer_ir(tmp_path, "Reverse", "opset1", {"mode": "index"}, [Input(SHAPE, F), Input((0,), I64)],
                         [(SHAPE, F)])
    (y,) = run_onnxruntime(ir2onnx.convert(xml), {"in0": x, "in1": axes})
    np.testing.assert_array_equal(y, x)


# A scalar shift applies to every listed axis (the specification); OpenVINO's CPU plugin refuses a shift whose
# length differs from the axes' ("shiftDims[0] == axesDims[0]"), so these are checked against numpy's roll.
ROLL_SCALAR = [
    Case("roll-broadcast-shift", lambda x: ops7.roll(x, const(-1, I64), const([0, 1, 2], I64)), [(SHAPE, I32)],
         values=[RNG.integers(-9, 9, SHAPE).astype(I32)]),
    Case("roll-runtime-scalar-shift", lambda x, s: ops7.roll(x, s, const([1, 2], I64)), [(SHAPE, F), ((), I32)],
         values=[RNG.standard_normal(SHAPE).astype(F), np.array(-7, I32)]),
]


@pytest.mark.parametrize("case", params(ROLL_SCALAR))
def test_roll_scalar_shift(tmp_path: Path, case: Case) -> None:
    axes = {"roll-broadcast-shift": (0, 1, 2), "roll-runtime-scalar-shift": (1, 2)}[case.name]
    shift = {"roll-broadcast-shift": lambda v: -1, "roll-runtime-scalar-shift": lambda v: int(v[1])}[case.name]
    run_against_numpy(case, tmp_path, lambda *v: [np.roll(v[0], [shift(v)] * len(axes), axes)])
