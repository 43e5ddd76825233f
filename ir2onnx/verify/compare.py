"""Comparing one output: shapes exactly, integers and booleans exactly, floats within rtol/atol."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from ir2onnx.verify.report import OutputComparison

BF16 = np.dtype(ml_dtypes.bfloat16)


def compare_output(name: str, got: np.ndarray, ref: np.ndarray | None, rtol: float, atol: float, *,
                   scaled: bool = False, step: float | None = None,
                   ties: np.ndarray | None = None, peak_rtol: float = 0.0) -> OutputComparison:
    """`scaled` (the check's comparison): `atol` in units of the reference's root mean square where that is above 1.
    Rounding in a sum grows with its terms, not with the result: an output of magnitude ~100 from sums over hundreds
    of channels carries ~1e-4 of f32 rounding in both runtimes at its values near zero.

    A bfloat16 output may also differ by one unit of bfloat16 at the reference value: on CPUs without bf16
    instructions OpenVINO's CPU plugin rounds f32 to bf16 with its own conversion, which is not round-to-nearest
    (tanh(0.640625) = 0.56532 is 0.5625 there; numpy and the model give 0.56640625), and two close f32 results may
    land a unit apart anyway.

    `step`: the output is quantized with that step (verify/quantized.py): values one step apart are a correct
    conversion, and the error is also reported in steps. `ties`: per element, how far the output moves when the
    model's QuantizeLinear inputs near a rounding tie round the other way (verify/quantized.py): differences up to
    twice that are what the two runtimes' rounding at ties explains. `peak_rtol` (intermediate layers): differences up
    to that fraction of the tensor's largest magnitude pass too: f32 rounding in a deep network grows with the terms
    summed, not with each value, so values near zero carry errors at the scale of the tensor."""
    if ref is None:
        return OutputComparison(name, tuple(got.shape), None, str(got.dtype), None, None, True, "not compared")
    shape_ok = tuple(got.shape) == tuple(ref.shape)
    if not shape_ok:
        return OutputComparison(name, tuple(got.shape), tuple(ref.shape), str(got.dtype), None, None, False,
                                "shape differs")
    if got.size == 0:
        return OutputComparison(name, tuple(got.shape), tuple(ref.shape), str(got.dtype), 0.0, 0.0, True)
    if got.dtype.kind in "OUS" or ref.dtype.kind in "OUS":  # strings: equal, element by element
        same = bool(np.all(np.asarray(got, dtype=str) == np.asarray(ref, dtype=str)))
        return OutputComparison(name, tuple(got.shape), tuple(ref.shape), "string", 0.0 if same else 1.0,
                                0.0 if same else 1.0, same, "" if same else "strings differ")
    exact = got.dtype.kind in "biu" or ref.dtype.kind in "biu"
    tie_note = False
    a = got.astype(np.float64)
    r = ref.astype(np.float64)
    both_nan = np.isnan(a) & np.isnan(r)
    with np.errstate(invalid="ignore"):  # inf - inf and 0 * inf: equal infinities are set to 0 below
        diff = np.where(both_nan, 0.0, np.abs(a - r))
        diff = np.where(np.isinf(a) & (a == r), 0.0, diff)
        max_abs = float(np.max(diff))
        rel = diff / np.maximum(np.abs(r), np.finfo(np.float64).tiny)
        max_rel = float(np.max(np.where(diff == 0, 0.0, rel)))
        if exact:
            ok = max_abs == 0.0
        else:
            if scaled:
                finite = r[np.isfinite(r)]
                atol *= max(1.0, float(np.sqrt(np.mean(np.square(finite))))) if finite.size else 1.0
            tol = atol + rtol * np.abs(r)
            if BF16 in (got.dtype, ref.dtype):
                tol = np.maximum(tol, bf16_unit(r))
            if step is not None:
                tol = np.maximum(tol, step * (1 + 1e-4))
            if peak_rtol:
                finite = np.abs(r[np.isfinite(r)])
                tol = np.maximum(tol, peak_rtol * (float(finite.max()) if finite.size else 0.0))
            strict = bool(np.all((diff <= tol) | both_nan | (diff == 0)))
            if ties is not None and ties.shape == diff.shape:
                tol = tol + 2 * np.where(np.isfinite(ties), ties, 0.0)
            ok = bool(np.all((diff <= tol) | both_nan | (diff == 0)))
            tie_note = ok and not strict
    steps = max_abs / step if step and not exact else None
    message = "" if ok else ("values differ" if not exact else "integer values differ")
    if steps is not None:
        message = f"{steps:.3g} quantization steps" + (f"; {message}" if message else "")
    if tie_note:
        message = "within what rounding at quantization ties explains" + (f"; {message}" if message else "")
    return OutputComparison(name, tuple(got.shape), tuple(ref.shape), str(got.dtype), max_abs, max_rel, ok,
                            message, steps)


def bf16_unit(values: np.ndarray) -> np.ndarray:
    """One unit in the last place of bfloat16 (8 significant bits) at each of `values` (float64), the subnormal
    spacing at the smallest."""
    info = ml_dtypes.finfo(ml_dtypes.bfloat16)
    with np.errstate(divide="ignore", invalid="ignore"):
        exponent = np.floor(np.log2(np.abs(values)))
    exponent = np.where(np.isfinite(exponent), exponent, info.minexp)
    return np.exp2(np.maximum(exponent, info.minexp) - info.nmant)
