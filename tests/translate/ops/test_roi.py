"""ROI ops (roi.py) against OpenVINO: every aligned mode, avg and max, fixed and adaptive sampling, ROIs partly or
wholly outside the map, tiny ROIs, run-time ROIs; ROIAlignRotated in both angle directions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino.opset3 as ops3
import openvino.opset9 as ops9
import openvino.opset15 as ops15
import pytest

from tests.translate.ops.cases import Case, const, params, run_case

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


def _rotated_rois(r: int, scale: float = 1.0) -> np.ndarray:
    c = RNG.random((r, 2)) * np.array([W + 4, H + 4]) / scale - 2
    wh = (RNG.random((r, 2)) * 9 + 0.2) / scale
    angle = RNG.uniform(-4, 4, (r, 1))
    rois = np.concatenate([c, wh, angle], 1).astype(F)
    rois[0] = [5, 4, 0.4, 0.3, 0.0]  # smaller than a pixel, upright
    rois[1] = [-6, -5, 2, 3, 1.0]  # outside the map
    rois[2] = [W - 1, H - 1, 6, 4, 0.5]  # over the far edges
    rois[3] = [6, 5, 8, 3, np.pi / 2]  # a quarter turn
    rois[4] = [4, 4, 5, 5, -np.pi]  # half a turn
    rois[5] = [3, 3, 0, 2, 0.2]  # no width: adaptive sampling takes no samples
    return rois


ROT_ROIS = _rotated_rois(8)
ROT_BATCH = RNG.integers(0, N, 8).astype(I32)
ROT_CASES = []
for clockwise in (False, True):
    for sr in (0, 1, 2):
        for scale in (1.0, 0.5):
            rois = ROT_ROIS if scale == 1.0 else _rotated_rois(8, scale)
            ROT_CASES.append(Case(
                f"roi-align-rotated-cw{int(clockwise)}-sr{sr}-scale{scale}",
                lambda x, s=sr, sc=scale, r=rois, cw=clockwise: ops15.roi_align_rotated(
                    x, const(r), const(ROT_BATCH, I32), 3, 4, s, sc, cw), [DATA]))
ROT_CASES += [
    Case("roi-align-rotated-runtime-rois", lambda x, r, i: ops15.roi_align_rotated(x, r, i, 2, 3, 0, 1.0, True),
         [DATA, ((8, 5), F), ((8,), I64)],
         values=[RNG.standard_normal((N, C, H, W)).astype(F), ROT_ROIS, ROT_BATCH.astype(I64)]),
    Case("roi-align-rotated-pooled1-sr3", lambda x: ops15.roi_align_rotated(
        x, const(ROT_ROIS), const(ROT_BATCH, I32), 1, 1, 3, 1.0, False), [DATA]),
    Case("roi-align-rotated-runtime-shape", lambda x: ops15.roi_align_rotated(
        x, const(ROT_ROIS), const(ROT_BATCH, I32), 2, 2, 0, 1.0, False), [((-1, C, -1, -1), F)],
         values=[RNG.standard_normal((N, C, H, W)).astype(F)]),
    Case("roi-align-rotated-f16", lambda x: ops15.roi_align_rotated(
        x, const(ROT_ROIS, F16), const(ROT_BATCH, I32), 2, 2, 2, 1.0, True), [((N, C, H, W), F16)],
         rtol=1e-3, atol=1e-3),
]


@pytest.mark.parametrize("case", params(ROT_CASES))
def test_roi_align_rotated(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)
