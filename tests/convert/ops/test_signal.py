"""DFT, IDFT, RDFT, IRDFT, STFT, ISTFT (signal.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino.opset16 as ops
import pytest

from tests.convert.ops.cases import Case, const, params, run_case

F, F16, I32, I64 = np.float32, np.float16, np.int32, np.int64
TOL = {"rtol": 1e-4, "atol": 1e-4}


def ax(*v: int):  # type: ignore[no-untyped-def]
    return const(list(v), I64)


def _cx(x: np.ndarray) -> np.ndarray:
    return x[..., 0] + 1j * x[..., 1]


def _pair(z: np.ndarray) -> np.ndarray:
    return np.stack([z.real, z.imag], -1).astype(F)


C = ((2, 3, 4, 2), F)
R = ((2, 3, 5), F)
CASES = [
    Case("dft-axis1", lambda x: ops.dft(x, ax(1)), [C], **TOL),
    Case("dft-negative-axis", lambda x: ops.dft(x, ax(-1)), [C], **TOL),
    Case("dft-two-axes", lambda x: ops.dft(x, ax(0, 2)), [C], **TOL),
    Case("dft-all-axes", lambda x: ops.dft(x, ax(2, 0, 1)), [C], **TOL),
    Case("dft-pad", lambda x: ops.dft(x, ax(1), ax(6)), [C], **TOL),
    Case("dft-trim-and-keep", lambda x: ops.dft(x, ax(1, 2), ax(2, -1)), [C], **TOL),
    Case("dft-i32-signal-size", lambda x: ops.dft(x, const([1], I32), const([5], I32)), [C], **TOL),
    Case("dft-runtime-signal-size", lambda x, s: ops.dft(x, ax(1, 2), s), [C, ((2,), I64)],
         values=[np.random.default_rng(1).standard_normal((2, 3, 4, 2)).astype(F), np.array([-1, 3], I64)], **TOL),
    Case("dft-f16", lambda x: ops.dft(x, ax(1)), [((2, 8, 2), F16)], rtol=5e-3, atol=5e-3),
    Case("idft-axis1", lambda x: ops.idft(x, ax(1)), [C], **TOL),
    Case("idft-two-axes", lambda x: ops.idft(x, ax(1, 2)), [C], **TOL),
    Case("idft-trim-pad", lambda x: ops.idft(x, ax(-2, -1), ax(2, 7)), [C], **TOL),
    Case("rdft-last", lambda x: ops.rdft(x, ax(2)), [R], **TOL),
    Case("rdft-two-axes", lambda x: ops.rdft(x, ax(1, 2)), [R], **TOL),
    Case("rdft-onesided-on-last-listed", lambda x: ops.rdft(x, ax(2, 1)), [R], **TOL),
    Case("rdft-negative-axis", lambda x: ops.rdft(x, ax(-1)), [R], **TOL),
    Case("rdft-trim", lambda x: ops.rdft(x, ax(2), ax(3)), [R], **TOL),
    Case("rdft-1d", lambda x: ops.rdft(x, ax(0)), [((8,), F)], **TOL),
    Case("irdft-last", lambda x: ops.irdft(x, ax(2)), [C], **TOL),
    Case("irdft-two-axes", lambda x: ops.irdft(x, ax(1, 2)), [C], **TOL),
    Case("irdft-onesided-on-last-listed", lambda x: ops.irdft(x, ax(2, 1)), [C], **TOL),
    Case("irdft-odd-length", lambda x: ops.irdft(x, ax(2), ax(7)), [C], **TOL),
    Case("irdft-trim-bins", lambda x: ops.irdft(x, ax(2), ax(4)), [C], **TOL),
]

# OpenVINO's CPU plugin cannot pad in RDFT ("Signal size greater than input size is not supported yet"): numpy.
_X = np.random.default_rng(3).standard_normal((2, 3, 5)).astype(F)
CASES.append(Case("rdft-pad-numpy", lambda x: ops.rdft(x, ax(1, 2), ax(4, 8)), [R], values=[_X],
                  expected=lambda x: [_pair(np.fft.rfftn(x, s=(4, 8), axes=(1, 2)))], **TOL))

# OpenVINO's CPU plugin miscomputes IRDFT when the output needs more bins than the input has (n = 12 from 4 bins
# gives values up to 0.77 away from numpy.fft.irfft), and cannot run signal_size -1 or run-time sizes.
_Z = np.random.default_rng(4).standard_normal((2, 3, 4, 2)).astype(F)
CASES += [
    Case("irdft-pad-bins-numpy", lambda x: ops.irdft(x, ax(-1), ax(12)), [C], values=[_Z],
         expected=lambda x: [np.fft.irfft(_cx(x), n=12, axis=2).astype(F)], **TOL),
    Case("irdft-keep-numpy", lambda x: ops.irdft(x, ax(1, 2), ax(-1, -1)), [C], values=[_Z],
         expected=lambda x: [np.fft.irfftn(_cx(x), axes=(1, 2)).astype(F)], **TOL),
    Case("irdft-runtime-signal-size-numpy", lambda x, s: ops.irdft(x, ax(1, 2), s), [C, ((2,), I64)],
         values=[_Z, np.array([2, 9], I64)],
         expected=lambda x, s: [np.fft.irfftn(_cx(x), s=tuple(s), axes=(1, 2)).astype(F)], **TOL),
]


@pytest.mark.parametrize("case", params(CASES))
def test_signal(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)
