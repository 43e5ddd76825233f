"""NaN/Inf tests, inverse hyperbolics, HardSigmoid, Selu, PRelu, GRN, Eye, ConvertPromoteTypes (math.py,
activations.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino.opset16 as ops
import pytest

from tests.translate.ops.cases import Case, const, params, run_case

F, F16, F64, I32, I64, U8, B = np.float32, np.float16, np.float64, np.int32, np.int64, np.uint8, np.bool_
SPECIAL = np.array([np.inf, -np.inf, np.nan, 1.5, -0.0, 3.4e38, -1e-30, 0.0], F)
SUBNORMAL = np.array([1e-40, -1e-40, 1e-45, 0.0], F)


def _eye(rows, cols, diag, et="f32", batch=None):  # type: ignore[no-untyped-def]
    return ops.eye(rows, cols, diag, et, batch)


def _cpt(a, b, **kw):  # type: ignore[no-untyped-def]
    return ops.convert_promote_types(a, b, **kw)


CASES = [
    Case("is-nan", lambda a: ops.is_nan(a), [((8,), F)], values=[SPECIAL]),
    Case("is-nan-f16", lambda a: ops.is_nan(a), [((4,), F16)], values=[np.array([np.nan, 1, np.inf, 0], F16)]),
    Case("is-inf", lambda a: ops.is_inf(a), [((8,), F)], values=[SPECIAL]),
    Case("is-inf-negative-only", lambda a: ops.is_inf(a, {"detect_positive": False}), [((8,), F)], values=[SPECIAL]),
    Case("is-inf-positive-only", lambda a: ops.is_inf(a, {"detect_negative": False}), [((8,), F)], values=[SPECIAL]),
    Case("is-inf-none", lambda a: ops.is_inf(a, {"detect_negative": False, "detect_positive": False}), [((8,), F)],
         values=[SPECIAL]),
    Case("is-inf-f16", lambda a: ops.is_inf(a), [((4,), F16)], values=[np.array([np.nan, -np.inf, np.inf, 0], F16)]),
    Case("is-finite", lambda a: ops.is_finite(a), [((8,), F)], values=[SPECIAL]),
    # OpenVINO's CPU plugin calls subnormal numbers not finite (while IsNaN and IsInf say they are neither)
    Case("is-finite-subnormal", lambda a: ops.is_finite(a), [((4,), F)], values=[SUBNORMAL],
         expected=lambda a: [np.isfinite(a)]),
    Case("is-nan-inf-subnormal", lambda a: [ops.is_nan(a), ops.is_inf(a)], [((4,), F)], values=[SUBNORMAL]),
    # f64: OpenVINO's CPU plugin says inf is neither infinite nor not finite (it computes in f32 and loses it)
    Case("is-nan-inf-finite-f64", lambda a: [ops.is_nan(a), ops.is_inf(a), ops.is_finite(a)], [((6,), F64)],
         values=[np.array([1e300, -1e300, 1e-320, np.nan, np.inf, -np.inf])],
         expected=lambda a: [np.isnan(a), np.isinf(a), np.isfinite(a)]),
    Case("is-finite-f16", lambda a: ops.is_finite(a), [((4,), F16)], values=[np.array([np.nan, -np.inf, 2, 0], F16)]),
    Case("acosh", lambda a: ops.acosh(a), [((5,), F)], values=[np.array([1, 1.5, 2, 10, 1e4], F)]),
    Case("asinh", lambda a: ops.asinh(a), [((2, 3), F)]),
    Case("atanh", lambda a: ops.atanh(a), [((5,), F)], values=[np.array([-0.99, -0.5, 0, 0.3, 0.9], F)]),
    Case("acosh-i32", lambda a: ops.acosh(a), [((4,), I32)], values=[np.array([1, 2, 3, 10], I32)]),
    Case("asinh-i32", lambda a: ops.asinh(a), [((5,), I32)], values=[np.array([-3, -1, 0, 2, 100], I32)]),
    Case("atanh-i64", lambda a: ops.atanh(a), [((1,), I64)], values=[np.array([0], I64)]),
    # OpenVINO's CPU plugin gives atanh(1) = 2^31 - 128 on u32/u64 (a finite f32 in place of inf): numpy decides;
    # these types go through int32 and wrap as the plugin converts f32 to them (NaN: int32's minimum wrapped)
    *[Case(f"atanh-{np.dtype(t).name}-limits", lambda a: ops.atanh(a), [((3,), t)], values=[np.array([0, 1, 2], t)],
           expected=lambda a: [(np.array([0, 2**31 - 1, -2**31], np.int64)).astype(a.dtype)])
      for t in (np.uint32, np.uint64)],
    Case("asinh-f16", lambda a: ops.asinh(a), [((2, 3), F16)], rtol=1e-3, atol=1e-3),
    Case("hard-sigmoid-const", lambda a: ops.hard_sigmoid(a, const(0.2), const(0.5)), [((2, 5), F)],
         values=[np.linspace(-4, 4, 10, dtype=F).reshape(2, 5)]),
    Case("hard-sigmoid-scalar-data", lambda a: ops.hard_sigmoid(a, const(0.3), const(0.4)), [((), F)]),
    Case("hard-sigmoid-f16", lambda a: ops.hard_sigmoid(a, const(0.3, F16), const(0.4, F16)), [((2, 5), F16)],
         rtol=1e-3, atol=1e-3),
    # OpenVINO's CPU plugin runs HardSigmoid and Selu only with constant parameters: run-time ones against numpy
    Case("hard-sigmoid-runtime", lambda a, al, be: ops.hard_sigmoid(a, al, be), [((2, 5), F), ((), F), ((), F)],
         values=[np.linspace(-4, 4, 10, dtype=F).reshape(2, 5), np.array(0.7, F), np.array(-0.1, F)],
         expected=lambda x, al, be: [np.clip(al * x + be, 0, 1).astype(F)]),
    Case("selu-const", lambda a: ops.selu(a, const([1.67326]), const([1.0507])), [((2, 3), F)]),
    Case("selu-runtime", lambda a, al, la: ops.selu(a, al, la), [((2, 3), F), ((1,), F), ((1,), F)],
         values=[np.array([[-2, -0.5, 0], [0.5, 1, 3]], F), np.array([2.0], F), np.array([0.5], F)],
         expected=lambda x, al, la: [(la * np.where(x > 0, x, al * np.exp(x) - al)).astype(F)]),
    Case("selu-f64", lambda a: ops.selu(a, const(1.5, F64), const(2.0, F64)), [((2, 3), F64)]),
    Case("prelu-channel", lambda a: ops.prelu(a, const([0.1, 0.2, 0.3])), [((2, 3, 4, 4), F)]),
    Case("prelu-last-dim", lambda a: ops.prelu(a, const([0.1, 0.2, 0.3, 0.4, 0.5])), [((3, 4, 5), F)]),
    Case("prelu-channel-equals-last", lambda a: ops.prelu(a, const([0.1, 0.2, 0.3])), [((2, 3, 3), F)]),
    Case("prelu-scalar", lambda a: ops.prelu(a, const([0.25])), [((2, 3), F)]),
    Case("prelu-1d-data", lambda a: ops.prelu(a, const([0.1, 0.2, 0.3])), [((3,), F)]),
    Case("prelu-2d-slope", lambda a: ops.prelu(a, const(np.full((4, 5), 0.3, F))), [((3, 4, 5), F)]),
    Case("prelu-runtime-slope", lambda a, s: ops.prelu(a, s), [((2, 3, 4), F), ((3,), F)]),
    # dims unknown at conversion time: per channel or numpy-style is decided at run time
    Case("prelu-dynamic-channel", lambda a, s: ops.prelu(a, s), [((2, -1, 4), F), ((-1,), F)],
         values=[np.linspace(-3, 3, 24, dtype=F).reshape(2, 3, 4), np.array([0.1, 0.2, 0.3], F)]),
    # (OpenVINO's CPU plugin cannot run this one: it fixes the per-channel form before the dims are known)
    Case("prelu-dynamic-last", lambda a, s: ops.prelu(a, s), [((2, -1, 4), F), ((-1,), F)],
         values=[np.linspace(-3, 3, 24, dtype=F).reshape(2, 3, 4), np.array([0.1, 0.2, 0.3, 0.4], F)],
         expected=lambda x, s: [np.where(x < 0, x * s, x)]),
    Case("grn", lambda a: ops.grn(a, 0.5), [((2, 3, 4), F)]),
    Case("grn-4d", lambda a: ops.grn(a, 1e-6), [((1, 5, 2, 3), F)]),
    Case("eye-square", lambda: _eye(const(3, I64), const(3, I64), const(0, I64)), []),
    Case("eye-wide-shifted", lambda: _eye(const([3], I32), const([5], I32), const([2], I32), "i32"), []),
    Case("eye-negative-diag", lambda: _eye(const(4, I64), const(3, I64), const(-1, I64), "u8"), []),
    Case("eye-out-of-range-diag", lambda: _eye(const(2, I64), const(3, I64), const(7, I64), "boolean"), []),
    Case("eye-batch", lambda: _eye(const(2, I64), const(3, I64), const(1, I64), "f16", const([2, 1], I64)), []),
    Case("eye-runtime", lambda r, c, d: _eye(r, c, d, "f32"), [((), I64), ((), I64), ((), I64)],
         values=[np.array(3, I64), np.array(4, I64), np.array(-2, I64)]),
    Case("eye-runtime-batch", lambda r, bs: _eye(r, const(2, I32), const(0, I32), "i64", bs), [((1,), I32), ((2,), I32)],
         values=[np.array([3], I32), np.array([2, 3], I32)]),
]

PROMOTE = [
    ("f32-i32-unsafe", F, I32, {"promote_unsafe": True}), ("f64-i32", F64, I32, {}),
    ("i8-u8-unsafe", np.int8, U8, {"promote_unsafe": True}), ("i16-u8", np.int16, U8, {}),
    ("f16-f32", F16, F, {}), ("bool-i32", B, I32, {}), ("i32-i32", I32, I32, {}), ("u8-i64", U8, I64, {}),
    ("i8-f16", np.int8, F16, {}), ("u8-u32", U8, np.uint32, {}), ("bool-f16", B, F16, {}),
    ("u64-i32-unsafe", np.uint64, I32, {"promote_unsafe": True}),
    ("u64-i64-target-f64", np.uint64, I64, {"promote_unsafe": True, "u64_integer_promotion_target": "f64"}),
    ("i64-f16-unsafe", I64, F16, {"promote_unsafe": True}),
    ("f64-f32", F64, F, {}), ("u32-i16-unsafe", np.uint32, np.int16, {"promote_unsafe": True}),
    ("u64-i8-unsafe", np.uint64, np.int8, {"promote_unsafe": True}), ("u64-f16-unsafe", np.uint64, F16, {"promote_unsafe": True}),
]
for _n, _a, _b, _kw in PROMOTE:
    CASES.append(Case(f"convert-promote-{_n}", lambda a, b, kw=_kw: _cpt(a, b, **kw), [((2, 3), _a), ((3,), _b)]))
CASES += [
    Case("convert-promote-pytorch-scalar", lambda a, b: _cpt(a, b, promote_unsafe=True, pytorch_scalar_promotion=True),
         [((2, 3), np.int8), ((), I64)]),
    Case("convert-promote-pytorch-scalar-float", lambda a, b: _cpt(a, b, pytorch_scalar_promotion=True),
         [((2, 3), np.int32), ((), F64)]),
    Case("convert-promote-pytorch-scalar-f16", lambda a, b: _cpt(a, b, promote_unsafe=True, pytorch_scalar_promotion=True),
         [((2, 3), F16), ((), F64)]),
]


@pytest.mark.parametrize("case", params(CASES))
def test_math(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)
