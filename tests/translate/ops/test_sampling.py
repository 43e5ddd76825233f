"""GridSample (sampling.py) against OpenVINO."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset9 as ops9
import pytest

import ir2onnx
from ir2onnx.errors import LayerConversionError
from tests.translate.ops.cases import Case, params, run_case
from tests.utils import save_ir

F = np.float32
RNG = np.random.default_rng(9)
X = RNG.standard_normal((2, 3, 5, 6)).astype(F)
GRID = (RNG.random((2, 4, 7, 2)) * 3 - 1.5).astype(F)  # inside and outside [-1, 1]
TICKS = (np.arange(-12, 13) / 10.0).astype(F)  # exact halves between pixels for nearest
TIES = np.stack(np.meshgrid(TICKS, TICKS), -1)[None].repeat(2, 0).astype(F)

CASES = [
    Case(f"grid-sample-{mode}-{pad}-{'ac' if ac else 'noac'}-{gname}",
         lambda x, g, m=mode, p=pad, a=ac: ops9.grid_sample(x, g, {"align_corners": a, "mode": m, "padding_mode": p}),
         [((2, 3, 5, 6), F), (grid.shape, F)], values=[X, grid], rtol=1e-4, atol=1e-5)
    for mode, pad, ac in itertools.product(["bilinear", "bicubic", "nearest"], ["zeros", "border", "reflection"],
                                           [False, True])
    for gname, grid in (("random", GRID), ("ties", TIES))
]
CASES += [Case(f"grid-sample-{mode}-onnx-opset{opset}",
               lambda x, g, m=mode: ops9.grid_sample(x, g, {"align_corners": True, "mode": m, "padding_mode": "border"}),
               [((2, 3, 5, 6), F), (GRID.shape, F)], values=[X, GRID], opset=opset, rtol=1e-4, atol=1e-5)
          for mode in ("bilinear", "bicubic", "nearest") for opset in (20, 21)]
CASES.append(Case("grid-sample-dynamic", lambda x, g: ops9.grid_sample(x, g, {"mode": "bilinear"}),
                  [((-1, 3, -1, -1), F), ((-1, -1, -1, 2), F)], values=[X, GRID]))

# integer data: sampled in f32, then rounded half to even (8-bit) or truncated (16 bits up), saturated. On a 4 x 8 input
# grid steps of 1/16 land on quarters and halves of pixels (exact ties), where f32 sums are exact in onnxruntime
# and the plugin alike (elsewhere the two differ in the last bits, which moves values across a tie); bicubic
# overshoots the 8-bit range
QUARTERS = np.arange(-20, 21) / 16.0
QGRID = np.stack(np.meshgrid(QUARTERS[::2], QUARTERS), -1)[None].repeat(2, 0).astype(F)
# halves across, whole rows down (bicubic weights of 5 bits): exact on 16-bit data too, whose overshoot wraps
HGRID = np.stack(np.meshgrid(QUARTERS[::2], (np.arange(-3, 3) * 2 + 1) / 4.0), -1)[None].repeat(2, 0).astype(F)
INTS = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.int64]
for dtype, mode, pad in itertools.product(INTS, ["bilinear", "bicubic", "nearest"], ["zeros", "border", "reflection"]):
    if mode == "nearest" and np.dtype(dtype).itemsize > 2:
        continue
    info = np.iinfo(dtype)
    lo, hi = (int(info.min), int(info.max)) if np.dtype(dtype).itemsize <= 2 else (-1000, 1000)
    xi = RNG.integers(lo, hi, (2, 3, 4, 8), endpoint=True)
    xi.flat[::4] = np.where(RNG.random(xi.size)[::4] < 0.5, lo, hi)
    grid = HGRID if mode == "bicubic" and np.dtype(dtype).itemsize == 2 else QGRID
    CASES.append(Case(f"grid-sample-{np.dtype(dtype).name}-{mode}-{pad}",
                      lambda x, g, m=mode, p=pad: ops9.grid_sample(x, g, {"mode": m, "padding_mode": p}),
                      [((2, 3, 4, 8), dtype), (grid.shape, F)], values=[xi.astype(dtype), grid]))


@pytest.mark.parametrize("case", params(CASES))
def test_sampling(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)


def test_grid_sample_nearest_wide_integers_refused(tmp_path: Path) -> None:
    x = ops9.parameter([2, 3, 5, 6], np.int32)
    g = ops9.parameter(list(GRID.shape), F)
    xml = save_ir(ov.Model([ops9.grid_sample(x, g, {"mode": "nearest"})], [x, g]), tmp_path)
    with pytest.raises(LayerConversionError, match="GridSample nearest on i32"):
        ir2onnx.convert(xml)
