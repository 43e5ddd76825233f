"""DFT, IDFT, RDFT, IRDFT, STFT, ISTFT (signal.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino.opset16 as ops
import pytest

from tests.translate.ops.cases import Case, const, params, run_case

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
    Case("dft-opset20", lambda x: ops.dft(x, ax(0, 2), ax(3, 5)), [C], opset=20, **TOL),
    Case("rdft-opset20", lambda x: ops.rdft(x, ax(1, 2)), [R], opset=20, **TOL),
    Case("irdft-opset20", lambda x: ops.irdft(x, ax(1, 2)), [C], opset=20, **TOL),
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


def _stft(x, w, fs, st, tr):  # type: ignore[no-untyped-def]
    return ops.stft(x, w, const(fs, I64), const(st, I64), tr)


def _istft(x, w, fs, st, center, norm, length=None):  # type: ignore[no-untyped-def]
    return ops.istft(x, w, const(fs, I64), const(st, I64), center, norm,
                     None if length is None else const(length, I64))


_W8 = (np.random.default_rng(5).random(8) + 0.5).astype(F)
_W6 = (np.random.default_rng(6).random(6) + 0.5).astype(F)
STFT_CASES = [
    Case("stft", lambda x, w: _stft(x, w, 8, 4, False), [((2, 20), F), ((8,), F)], **TOL),
    Case("stft-transpose-frames", lambda x, w: _stft(x, w, 8, 4, True), [((2, 20), F), ((8,), F)], **TOL),
    Case("stft-short-window", lambda x, w: _stft(x, w, 8, 3, False), [((2, 20), F), ((5,), F)], **TOL),
    Case("stft-odd-frame", lambda x, w: _stft(x, w, 9, 2, True), [((2, 21), F), ((6,), F)], **TOL),
    Case("stft-1d", lambda x, w: _stft(x, w, 8, 4, False), [((20,), F), ((8,), F)], **TOL),
    Case("stft-runtime-sizes", lambda x, w, fs, st: ops.stft(x, w, fs, st, False),
         [((2, 20), F), ((8,), F), ((), I64), ((), I64)],
         values=[np.random.default_rng(7).standard_normal((2, 20)).astype(F), _W8, np.array(8, I64),
                 np.array(3, I64)], **TOL),
]
for _center in (False, True):
    for _norm in (False, True):
        STFT_CASES.append(Case(f"istft-center{int(_center)}-norm{int(_norm)}",
                               lambda x, c=_center, n=_norm: _istft(x, const(_W8), 8, 2, c, n), [((2, 5, 7, 2), F)],
                               **TOL))
STFT_CASES += [
    Case("istft-runtime-step", lambda x, st: ops.istft(x, const(_W8), const(8, I64), st, True, False),
         [((2, 5, 7, 2), F), ((), I64)],
         values=[np.random.default_rng(9).standard_normal((2, 5, 7, 2)).astype(F), np.array(3, I64)], **TOL),
    Case("istft-3d", lambda x: _istft(x, const(_W8), 8, 4, True, False), [((5, 6, 2), F)], **TOL),
    Case("istft-short-window", lambda x: _istft(x, const(_W6), 8, 2, False, False), [((2, 5, 7, 2), F)], **TOL),
    Case("istft-odd-frame-center", lambda x: _istft(x, const(_W6), 9, 3, True, False), [((2, 5, 6, 2), F)], **TOL),
    Case("istft-length-shorter", lambda x: _istft(x, const(_W8), 8, 4, True, False, 14), [((2, 5, 6, 2), F)], **TOL),
    Case("istft-length-longer", lambda x: _istft(x, const(_W8), 8, 4, False, False, 40), [((2, 5, 6, 2), F)], **TOL),
    Case("istft-length-longer-center", lambda x: _istft(x, const(_W8), 8, 4, True, True, 30), [((2, 5, 6, 2), F)],
         **TOL),
    Case("istft-runtime-window-length", lambda x, w, n: ops.istft(x, w, const(8, I64), const(4, I64), True, False, n),
         [((2, 5, 6, 2), F), ((8,), F), ((), I64)],
         values=[np.random.default_rng(8).standard_normal((2, 5, 6, 2)).astype(F), _W8, np.array(17, I64)], **TOL),
]


@pytest.mark.parametrize("case", params(STFT_CASES))
def test_stft(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)
