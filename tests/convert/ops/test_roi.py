"""ROI ops (roi.py) against OpenVINO: every aligned mode, avg and max, fixed and adaptive sampling, ROIs partly or
wholly outside the map, tiny ROIs, run-time ROIs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino.opset3 as ops3
import openvino.opset9 as ops9
import pytest

from tests.convert.ops.cases import Case, const, params, run_case

F, F16, I32, I64 = np.float32, np.float16, np.int32, np.int64
RNG = np.random.default_rng(23)
N, C, H, W = 2, 3, 10, 12


def _rois(r: int, scale: float = 1.0) -> np.ndarray:
    xy = RNG.random((r, 2)) * np.array([W, H]) / scale - 1
    wh = RNG.random((r, 2)) * 8 / scale
    rois = np.concatenate([xy, xy + wh], 1).astype(F)
    rois[0] = [2, 2, 2.5, 2.4]  # smaller than a pixel
    rois[1] = [-4, -3, -1.5, -1.2]  # outside the map
    rois[2] = [W - 2, H - 3, W + 2, H + 4]  # over the far edges
    return rois


ROIS = _rois(7)
BATCH = RNG.integers(0, N, 7).astype(I32)
DATA = ((N, C, H, W), F)

CASES = []
for mode in ("avg", "max"):
    for sr in (0, 2):
        for scale in (1.0, 0.5):
            rois = ROIS if scale == 1.0 else _rois(7, scale)
            CASES.append(Case(f"roi-align-3-{mode}-sr{sr}-scale{scale}", lambda x, m=mode, s=sr, sc=scale, r=rois:
                              ops3.roi_align(x, const(r), const(BATCH, I32), 3, 4, s, sc, m), [DATA]))
            for aligned in ("asymmetric", "half_pixel_for_nn", "half_pixel"):
                CASES.append(Case(f"roi-align-9-{mode}-{aligned}-sr{sr}-scale{scale}",
                                  lambda x, m=mode, s=sr, sc=scale, a=aligned, r=rois: ops9.roi_align(
                                      x, const(r), const(BATCH, I32), 2, 3, s, sc, m, a), [DATA]))
CASES += [
    Case("roi-align-9-max-runtime-rois", lambda x, r, i: ops9.roi_align(x, r, i, 2, 2, 0, 1.0, "max", "half_pixel"),
         [DATA, ((7, 4), F), ((7,), I64)],
         values=[RNG.standard_normal((N, C, H, W)).astype(F), ROIS, BATCH.astype(I64)]),
    Case("roi-align-9-avg-runtime-rois", lambda x, r, i: ops9.roi_align(x, r, i, 2, 2, 0, 1.0, "avg", "half_pixel"),
         [DATA, ((7, 4), F), ((7,), I64)],
         values=[RNG.standard_normal((N, C, H, W)).astype(F), ROIS, BATCH.astype(I64)]),
    Case("roi-align-9-max-big-rois-adaptive", lambda x: ops9.roi_align(
        x, const(np.array([[0, 0, 11, 9], [1, 0.5, 7, 9.5]], F)), const(np.array([1, 0], I32), I32), 2, 2, 0, 1.0,
        "max", "asymmetric"), [DATA]),
]


@pytest.mark.parametrize("case", params(CASES))
def test_roi(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)
