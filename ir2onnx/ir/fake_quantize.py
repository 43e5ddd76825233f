"""Whether a FakeQuantize layer is an 8-bit integer grid, the form ONNX's QuantizeLinear/DequantizeLinear compute.

FakeQuantize maps x in [il, ih] to `levels` evenly spaced values from ol to oh. It is an integer grid where its
ranges are constants, vary along at most one axis, and put level 0 at an integer zero point of an 8-bit type, on the
input side and on the output side: 256 levels as uint8 (0..255); 255 levels (NNCF's narrow range for weights) as
int8 (-127..127), on a constant input only (on a run-time one, QuantizeLinear's saturation at -128 would take inputs
below the range one step lower); 16 and 15 levels alike as uint4 (0..15) and int4 (-7..7), which ONNX has from
opset 21. `ir2onnx info` and the converter (translate/ops/quantization.py) share this test.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

# levels -> (numpy integer type, lowest and highest stored value, the stored value of level 0)
GRIDS = {256: (np.uint8, 0, 255, 0), 255: (np.int8, -127, 127, -127),
         16: (ml_dtypes.uint4, 0, 15, 0), 15: (ml_dtypes.int4, -7, 7, -7)}
NARROW = (255, 15)  # grids one level short of the type's: constant inputs only
FOUR_BIT = (16, 15)


@dataclass(frozen=True)
class Grid:
    """The integer form of a FakeQuantize: y = (q - zero_out) * scale_out, q = round(x / scale_in) + zero_in
    (saturated to the type), per tensor (`axis` None: scalars) or along `axis` (1-D, one per channel)."""

    dtype: type
    axis: int | None
    scale_in: np.ndarray
    zero_in: np.ndarray
    scale_out: np.ndarray
    zero_out: np.ndarray


def integer_grid(levels: int, ranges: list[np.ndarray | None], rank: int | None,
                 constant_input: bool) -> Grid | str:
    """The grid of a FakeQuantize with these `levels` and (il, ih, ol, oh) `ranges` (None: a run-time input) over
    an input of `rank`, or why it has none."""
    if levels not in GRIDS:
        return f"{levels} levels"
    if levels in NARROW and not constant_input:
        return f"{levels} levels on a run-time input"
    if any(r is None for r in ranges):
        return "run-time ranges"
    il, ih, ol, oh = (np.asarray(r, np.float32) for r in ranges)  # type: ignore[arg-type]
    axis = _channel_axis([r.shape for r in (il, ih, ol, oh)], rank) if rank is not None else None
    if axis is None:
        return "ranges vary along more than one axis"
    if not (np.all(il < ih) and np.all(ol < oh)):
        return "empty or reversed ranges"
    grid_in, grid_out = _steps(il, ih, levels), _steps(ol, oh, levels)
    if grid_in is None or grid_out is None:
        return "no integer zero point"
    dtype, low, high, offset = GRIDS[levels]
    zero_in, zero_out = grid_in[1] + offset, grid_out[1] + offset
    if not all(np.all((low <= z) & (z <= high)) for z in (zero_in, zero_out)):
        return "zero point outside the integer type"
    assert rank is not None
    n = max((r.shape[axis - (rank - r.ndim)] for r in (il, ih, ol, oh) if 0 <= axis - (rank - r.ndim)), default=1)

    def per_axis(a: np.ndarray, t: type) -> np.ndarray:
        a = np.asarray(a).reshape(-1)
        return (np.broadcast_to(a, (n,)).copy() if axis >= 0 else a.reshape(())).astype(t)

    return Grid(dtype, axis if axis >= 0 else None, per_axis(grid_in[0], np.float32), per_axis(zero_in, dtype),
                per_axis(grid_out[0], np.float32), per_axis(zero_out, dtype))


def levels_of(x: np.ndarray, levels: int, ranges: list[np.ndarray]) -> np.ndarray:
    """The stored integers of a constant input, level k computed with OpenVINO's CPU formula for constant ranges
    (round(x * scale + shift), half to even; clamped outside the range), plus the type's offset."""
    il, ih = (np.asarray(r, np.float32) for r in ranges[:2])
    x = np.asarray(x, np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        in_scale = np.float32(levels - 1) / (ih - il)
        q = np.round(x * in_scale + (-il * in_scale))
    q = np.where(x <= np.minimum(il, ih), 0, np.where(x > np.maximum(il, ih), levels - 1, q))
    dtype, _, _, offset = GRIDS[levels]
    return (q + offset).astype(dtype)


def _steps(lo: np.ndarray, hi: np.ndarray, levels: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Scale and integer zero point (level 0 at `lo`) of `levels` steps from lo to hi, where the zero point is within
    1e-3 of an integer."""
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = ((hi - lo) / np.float32(levels - 1)).astype(np.float32)
        zp = -lo / scale
    if not (np.all(np.isfinite(zp)) and np.all(scale > 0)):
        return None
    rounded = np.round(zp)
    return (scale, rounded) if np.all(np.abs(zp - rounded) <= 1e-3) else None


def _channel_axis(shapes: list[tuple[int, ...]], rank: int) -> int | None:
    """-1 when every range is one value; the axis (of a rank-`rank` input) along which they vary, where that is one
    axis; else None."""
    axes: set[int] = set()
    for shape in shapes:
        if len(shape) > rank:
            return None
        axes |= {rank - len(shape) + a for a, d in enumerate(shape) if d != 1}
    return -1 if not axes else axes.pop() if len(axes) == 1 else None
