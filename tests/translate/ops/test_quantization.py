"""FakeQuantize and FakeConvert (quantization.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import ml_dtypes
import numpy as np
import openvino.opset13 as ops
import pytest

from tests.translate.ops.cases import Case, const, params, run_case

F, F16 = np.float32, np.float16
RNG = np.random.default_rng(11)


def fq(x, il, ih, ol, oh, levels, mode="numpy"):  # type: ignore[no-untyped-def]
    return ops.fake_quantize(x, il, ih, ol, oh, levels, mode)


def _ranges(channels: int, swap: bool = False) -> list[np.ndarray]:
    il = RNG.uniform(-2, -0.1, (1, channels, 1)).astype(F)
    ih = RNG.uniform(0.1, 2, (1, channels, 1)).astype(F)
    ol = RNG.uniform(-3, 0, (1, channels, 1)).astype(F)
    oh = RNG.uniform(0, 3, (1, channels, 1)).astype(F)
    return [ih, il, ol, oh] if swap else [il, ih, ol, oh]


def _data(channels: int, ranges: list[np.ndarray]) -> np.ndarray:
    """Normal values plus each channel's exact range ends."""
    x = (RNG.standard_normal((2, channels, 40)) * 1.5).astype(F)
    x[0, :, 0], x[0, :, 1] = ranges[0][0, :, 0], ranges[1][0, :, 0]
    return x


def spec_fq(x, il, ih, ol, oh, levels):  # type: ignore[no-untyped-def]
    """OpenVINO's specification formula, in f32."""
    n = F(levels - 1)
    y = np.round((x - il) / (ih - il) * n) / n * (oh - ol) + ol
    return np.where(x <= np.minimum(il, ih), ol, np.where(x > np.maximum(il, ih), oh, y)).astype(F)


CASES: list[Case] = []
for _levels in (2, 3, 16, 255, 256, 65536):
    _r = _ranges(3)
    CASES.append(Case(f"fq-const-per-channel-{_levels}", lambda x, r=_r, n=_levels: fq(x, *map(const, r), n),
                      [((2, 3, 40), F)], values=[_data(3, _r)]))
    _r = _ranges(3)
    CASES.append(Case(f"fq-runtime-ranges-{_levels}", lambda x, a, b, c, d, n=_levels: fq(x, a, b, c, d, n),
                      [((2, 3, 40), F)] + [((1, 3, 1), F)] * 4, values=[_data(3, _r), *_r]))
_r = _ranges(3)
_rs = _ranges(3, swap=True)
CASES += [
    Case("fq-scalar-ranges-256", lambda x: fq(x, const(-1.0), const(1.0), const(-1.0), const(1.0), 256), [((4, 50), F)]),
    Case("fq-ties-half-to-even", lambda x: fq(x, const(0.0), const(1.0), const(0.0), const(1.0), 5), [((9,), F)],
         values=[np.array([0.125, 0.375, 0.625, 0.875, 0.0, 1.0, -0.0, 0.5, 2.0], F)]),
    Case("fq-inverted-output", lambda x: fq(x, const(-1.0), const(1.0), const(1.0), const(-1.0), 5), [((30,), F)],
         values=[np.linspace(-1.5, 1.5, 30, dtype=F)]),
    Case("fq-mixed-const-runtime", lambda x, ol, oh, r=_r: fq(x, const(r[0]), const(r[1]), ol, oh, 255),
         [((2, 3, 40), F), ((1, 3, 1), F), ((1, 3, 1), F)], values=[_data(3, _r), _r[2], _r[3]]),
    Case("fq-runtime-low-above-high", lambda x, a, b, c, d: fq(x, a, b, c, d, 16),
         [((2, 3, 40), F)] + [((1, 3, 1), F)] * 4, values=[_data(3, _rs), *_rs]),
    Case("fq-equal-range", lambda x, a, b, c, d: fq(x, a, a, c, d, 16),
         [((6,), F), ((), F), ((), F), ((), F), ((), F)],
         values=[np.array([-1, 0, 0.5, 0.5, 0.6, 2], F), np.array(0.5, F), np.array(0, F), np.array(-1, F),
                  np.array(1, F)]),
    Case("fq-broadcast-none", lambda x: fq(x, const(np.full((2, 3), -1, F)), const(np.full((2, 3), 1, F)),
                                           const(np.full((2, 3), 0, F)), const(np.full((2, 3), 4, F)), 5, "none"),
         [((2, 3), F)]),
    Case("fq-f16", lambda x: fq(x, const(-1.0, F16), const(1.0, F16), const(-2.0, F16), const(2.0, F16), 17),
         [((3, 20), F16)], rtol=1e-3, atol=1e-3),
    # OpenVINO's CPU plugin returns output_low everywhere for constant ranges with input_low > input_high; its
    # specification, its reference and its own run-time-range path agree with this numpy formula.
    Case("fq-const-low-above-high", lambda x, r=_rs: fq(x, *map(const, r), 16), [((2, 3, 40), F)],
         values=[_data(3, _rs)], expected=lambda x, r=_rs: [spec_fq(x, *r, 16)]),
]

SPECIAL = np.array([448, 449, 464, 465, 480, 500, 1e6, -1e6, 57344, 61440, 65536, 1e-9, 0.0019, 0.00195, 0.0029,
                    np.inf, -np.inf, 25.000422, -11.496624, 0.0], F)
for _dt in ("f8e4m3", "f8e5m2"):
    CASES += [
        Case(f"fake-convert-{_dt}-scale", lambda x, d=_dt: ops.fake_convert(x, const(1.0), destination_type=d),
             [((2, 20), F)], values=[np.stack([SPECIAL, (RNG.standard_normal(20) * 50).astype(F)])]),
        Case(f"fake-convert-{_dt}-scale-shift", lambda x, d=_dt: ops.fake_convert(
            x, const(np.array([[0.5], [4.0]], F)), const(np.array([[0.25], [-1.0]], F)), d), [((2, 50), F)]),
        Case(f"fake-convert-{_dt}-runtime", lambda x, s, t, d=_dt: ops.fake_convert(x, s, t, d),
             [((2, 50), F), ((2, 1), F), ((2, 1), F)],
             values=[(RNG.standard_normal((2, 50)) * 20).astype(F), np.array([[0.5], [3.0]], F),
                     np.array([[0.0], [1.0]], F)]),
        Case(f"fake-convert-{_dt}-f16", lambda x, d=_dt: ops.fake_convert(x, const(2.0, F16), const(0.5, F16), d),
             [((30,), F16)]),
    ]


def _fake_convert_nan(x: np.ndarray, dt: str) -> np.ndarray:
    t = ml_dtypes.float8_e4m3fn if dt == "f8e4m3" else ml_dtypes.float8_e5m2
    return x.astype(t).astype(F)


# NaN: OpenVINO's CPU plugin returns minus the largest finite value; a conversion keeps NaN.
for _dt in ("f8e4m3", "f8e5m2"):
    CASES.append(Case(f"fake-convert-{_dt}-nan", lambda x, d=_dt: ops.fake_convert(x, const(1.0), destination_type=d),
                      [((3,), F)], values=[np.array([np.nan, 1.0, -2.0], F)],
                      expected=lambda x, d=_dt: [_fake_convert_nan(x, d)]))


@pytest.mark.parametrize("case", params(CASES))
def test_quantization(tmp_path: Path, case: Case) -> None:
    """OpenVINO's FakeQuantize arithmetic, exactly (test_quantization_qdq.py: ONNX's quantized form)."""
    run_case(replace(case, convert={"quantization": "exact"}), tmp_path)
