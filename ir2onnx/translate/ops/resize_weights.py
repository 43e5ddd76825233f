"""OpenVINO Interpolate along one axis, as numbers: source indices (nearest) or a weight matrix (linear, linear_onnx,
cubic). Coordinates are computed in float32 as OpenVINO computes them. Every mode of Interpolate-4/11 is separable:
the result is these per-axis maps applied one axis after another.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

f32 = np.float32


@dataclass(frozen=True)
class AxisSpec:
    mode: str  # nearest | linear | linear_onnx | cubic
    coord: str  # half_pixel | pytorch_half_pixel | asymmetric | tf_half_pixel_for_nn | align_corners
    nearest: str = "round_prefer_floor"
    antialias: bool = False  # linear: in effect when some interpolated axis is downsampled
    cube_coeff: float = -0.75


def source_coords(n_in: int, n_out: int, scale: float, coord: str) -> np.ndarray:
    """Source coordinate of each output position (float32), identity where scale == 1 or the length is kept."""
    x = np.arange(n_out, dtype=f32)
    s, lo, li = f32(scale), f32(n_out), f32(n_in)
    if s == f32(1) or n_out == n_in:
        return x
    if coord == "pytorch_half_pixel":
        return (x + f32(0.5)) / s - f32(0.5) if lo > 1 else np.zeros_like(x)
    if coord == "asymmetric":
        return x / s
    if coord == "tf_half_pixel_for_nn":
        return (x + f32(0.5)) / s
    if coord == "align_corners":
        return np.zeros_like(x) if lo == 1 else x * (li - f32(1)) / (lo - f32(1))
    return (x + f32(0.5)) / s - f32(0.5)  # half_pixel


def _round_half_away(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.floor(np.abs(x) + f32(0.5))


def nearest_indices(n_in: int, n_out: int, scale: float, spec: AxisSpec) -> np.ndarray:
    x = source_coords(n_in, n_out, scale, spec.coord)
    mode = spec.nearest
    if mode == "round_prefer_ceil":
        idx = _round_half_away(x)
    elif mode == "floor":
        idx = np.floor(x)
    elif mode == "ceil":
        idx = np.ceil(x)
    elif mode == "simple":
        idx = np.ceil(x) if f32(scale) < f32(1) else np.trunc(x)
    else:  # round_prefer_floor
        half = x == np.trunc(x) + f32(0.5)
        idx = np.where(half, np.floor(x), _round_half_away(x))
    return np.clip(idx.astype(np.int64), 0, n_in - 1)


def weight_matrix(n_in: int, n_out: int, scale: float, spec: AxisSpec, downsampling: bool) -> np.ndarray:
    """W[out, in] (float64) with y = W @ x along the axis."""
    x = source_coords(n_in, n_out, scale, spec.coord).astype(np.float64)
    w = np.zeros((n_out, n_in), np.float64)
    rows = np.arange(n_out)
    if spec.mode == "linear_onnx":
        xc = np.clip(x.astype(f32), f32(0), f32(n_in - 1))
        i1 = np.minimum(xc.astype(np.int64), n_in - 1)
        i2 = np.minimum(i1 + 1, n_in - 1)
        d1 = np.abs(xc - i1.astype(f32)).astype(np.float64)
        d2 = np.abs(xc - i2.astype(f32)).astype(np.float64)
        same = i1 == i2
        d1, d2 = np.where(same, 0.5, d1), np.where(same, 0.5, d2)
        np.add.at(w, (rows, i1), d2)
        np.add.at(w, (rows, i2), d1)
        return w
    if spec.mode == "cubic":
        xf = x.astype(f32)
        base = np.floor(xf)
        t = np.abs(xf - base).astype(np.float64)
        a = float(f32(spec.cube_coeff))
        coeffs = [((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a,
                  ((a + 2) * t - (a + 3)) * t * t + 1,
                  ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1,
                  ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a]
        for k, c in enumerate(coeffs):
            idx = np.clip(base.astype(np.int64) - 1 + k, 0, n_in - 1)
            np.add.at(w, (rows, idx), c)
        return w
    # linear: a triangle filter, widened by 1/scale when antialiasing a downsampling, normalised per row
    s = float(f32(scale))
    a = s if spec.antialias and downsampling else 1.0
    r = 2 if s > 1.0 else int(np.ceil(f32(2.0) / f32(a)))
    centre = _round_half_away(x.astype(f32)).astype(np.int64)
    for k in range(-r, r + 1):
        i = centre + k
        ok = (i >= 0) & (i < n_in)
        tri = np.maximum(0.0, 1.0 - np.abs(a * (x - i)))
        np.add.at(w, (rows[ok], i[ok]), tri[ok])
    total = w.sum(axis=1, keepdims=True)
    return np.divide(w, total, out=np.zeros_like(w), where=total != 0)


def _pillow_bilinear(t: np.ndarray) -> np.ndarray:
    t = np.abs(t)
    return np.where(t < 1, 1 - t, 0.0)


def _pillow_bicubic(t: np.ndarray) -> np.ndarray:
    a = -0.5
    t = np.abs(t)
    near = ((a + 2) * t - (a + 3)) * t * t + 1
    far = (((t - 5) * t + 8) * t - 4) * a
    return np.where(t < 1, near, np.where(t < 2, far, 0.0))


def pillow_matrix(n_in: int, n_out: int, scale: float, coord: str, bicubic: bool) -> np.ndarray:
    """W[out, in] of OpenVINO's bilinear_pillow / bicubic_pillow: a filter of support 1 (2 for bicubic) widened by
    the downsampling factor, taken over [int(c - support + .5), int(c + support + .5)) around the source centre c
    (in pixel-edge coordinates) and normalised."""
    w = np.zeros((n_out, n_in), np.float64)
    centres = source_coords(n_in, n_out, scale, coord)
    down = f32(1) / f32(scale)
    clip = max(f32(1), down)
    support = f32(2 if bicubic else 1) * clip
    fn = _pillow_bicubic if bicubic else _pillow_bilinear
    for o, c in enumerate(centres + f32(0.5)):  # the centre in pixel-edge coordinates, as Pillow takes it
        lo = max(int(c - support + f32(0.5)), 0)
        hi = min(int(c + support + f32(0.5)), n_in)
        if hi <= lo:
            continue
        i = np.arange(lo, hi)
        ws = fn((i - float(c) + 0.5) * float(f32(1) / clip))
        total = ws.sum()
        w[o, lo:hi] = ws / total if total != 0 else ws
    return w
