"""Bitwise And/Or/Xor/Not and shifts (bitwise.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino.opset16 as ops
import pytest

from tests.translate.ops.cases import Case, params, run_case

B = np.bool_
BOOLS = [np.array([True, False, True, False]), np.array([True, True, False, False])]


def _ints(dt: type) -> list[np.ndarray]:
    info = np.iinfo(dt)
    lo, hi = max(info.min, -(2**31)), min(info.max, 2**31 - 1)  # the CPU plugin runs 64-bit integers as 32-bit
    a = np.array([0, 1, 5, 12, hi, lo, hi // 3, 77 % (hi + 1)], dtype=np.int64)
    b = np.array([3, 2, 6, 10, 1, lo, hi, 0], dtype=np.int64)
    return [a.astype(dt), b.astype(dt)]


CASES: list[Case] = []
for _name, _fn in (("and", ops.bitwise_and), ("or", ops.bitwise_or), ("xor", ops.bitwise_xor)):
    CASES.append(Case(f"bitwise-{_name}-bool", lambda a, b, f=_fn: f(a, b), [((4,), B), ((4,), B)], values=BOOLS))
    for _dt in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64):
        CASES.append(Case(f"bitwise-{_name}-{np.dtype(_dt).name}", lambda a, b, f=_fn: f(a, b),
                          [((8,), _dt), ((8,), _dt)], values=_ints(_dt)))
    CASES.append(Case(f"bitwise-{_name}-broadcast", lambda a, b, f=_fn: f(a, b), [((2, 3), np.int32), ((3,), np.int32)]))
CASES += [
    Case("bitwise-not-bool", lambda a: ops.bitwise_not(a), [((4,), B)], values=BOOLS[:1]),
    Case("bitwise-not-i32", lambda a: ops.bitwise_not(a), [((8,), np.int32)], values=_ints(np.int32)[:1]),
    Case("bitwise-not-u8", lambda a: ops.bitwise_not(a), [((8,), np.uint8)], values=_ints(np.uint8)[:1]),
    Case("bitwise-not-i64", lambda a: ops.bitwise_not(a), [((8,), np.int64)], values=_ints(np.int64)[:1]),
]

# Shifts: counts inside and beyond the bit width and negative counts (taken modulo 32 for types up to 32 bits).
X_SIGNED = np.array([5, -5, -1, 100, 7, -128, 1, 3, 3, 27, -27, 1], np.int64)
S_SIGNED = np.array([1, 1, 3, 2, 0, 1, 7, 8, 40, -1, 33, 31], np.int64)
X_UNSIGNED = np.array([5, 250, 255, 100, 7, 128, 1, 3, 3, 27, 200, 1], np.int64)
for _dt in (np.int8, np.int16, np.int32, np.uint8, np.uint16):
    _x = X_SIGNED if np.dtype(_dt).kind == "i" else X_UNSIGNED
    _s = S_SIGNED if np.dtype(_dt).kind == "i" else np.abs(S_SIGNED)
    for _name, _fn in (("left", ops.bitwise_left_shift), ("right", ops.bitwise_right_shift)):
        CASES.append(Case(f"shift-{_name}-{np.dtype(_dt).name}", lambda a, b, f=_fn: f(a, b), [((12,), _dt), ((12,), _dt)],
                          values=[_x.astype(_dt), _s.astype(_dt)]))


def _np_shift(x: np.ndarray, s: np.ndarray, left: bool) -> np.ndarray:
    """Shifts in the type's own width (count modulo 32 or 64), with Python integers."""
    bits = x.dtype.itemsize * 8
    width = 64 if bits == 64 else 32
    out = []
    for a, c in zip(x.tolist(), s.tolist()):
        c %= width
        v = a << c if left else a >> c
        out.append(v % (1 << bits))
    res = np.array(out, dtype=np.uint64)
    return res.astype(x.dtype)


# OpenVINO's CPU plugin runs i64/u64/u32 shifts in 32-bit signed arithmetic (high bits lost, u32 right shifts are
# arithmetic): those are checked against numpy.
X64 = np.array([2**40, -(2**40), 3, 3, 2**31 - 1, -7, -(2**63), 2**62], np.int64)
S64 = np.array([1, 1, 33, 63, 1, 70, 1, 1], np.int64)
X_U32 = np.array([2**31, 3, 3, 2**32 - 1, 12, 0], np.uint32)
S_U32 = np.array([1, 31, 33, 4, 2, 5], np.uint32)
for _name, _fn, _left in (("left", ops.bitwise_left_shift, True), ("right", ops.bitwise_right_shift, False)):
    CASES += [
        Case(f"shift-{_name}-i64-numpy", lambda a, b, f=_fn: f(a, b), [((8,), np.int64), ((8,), np.int64)],
             values=[X64, S64], expected=lambda a, b, lf=_left: [_np_shift(a, b, lf)]),
        Case(f"shift-{_name}-u64-numpy", lambda a, b, f=_fn: f(a, b), [((8,), np.uint64), ((8,), np.uint64)],
             values=[X64.astype(np.uint64), S64.astype(np.uint64)],
             expected=lambda a, b, lf=_left: [_np_shift(a, b, lf)]),
        Case(f"shift-{_name}-u32-numpy", lambda a, b, f=_fn: f(a, b), [((6,), np.uint32), ((6,), np.uint32)],
             values=[X_U32, S_U32], expected=lambda a, b, lf=_left: [_np_shift(a, b, lf)]),
        Case(f"shift-{_name}-i64-small", lambda a, b, f=_fn: f(a, b), [((6,), np.int64), ((6,), np.int64)],
             values=[np.array([5, -5, -1, 100, 7, -128]), np.array([1, 1, 3, 2, 0, 20])]),
        Case(f"shift-{_name}-broadcast", lambda a, b, f=_fn: f(a, b), [((2, 3), np.int32), ((), np.int32)],
             values=[np.array([[1, -2, 3], [40, -50, 60]], np.int32), np.array(3, np.int32)]),
    ]


@pytest.mark.parametrize("case", params(CASES))
def test_bitwise(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)

