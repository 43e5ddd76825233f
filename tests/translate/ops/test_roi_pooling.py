"""ROIPooling-2 (roi_pooling.py) against OpenVINO: max and bilinear, spatial scales, ROIs partly or wholly outside
the map, one-cell and reversed ROIs, halves in the rounding, the -1 batch id ending the ROIs, pooled sizes 1,
run-time ROIs, f16."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino.opset2 as ops2
import pytest

from tests.translate.ops.cases import Case, params, run_case

F, F16 = np.float32, np.float16
RNG = np.random.default_rng(31)
N, C, H, W = 2, 3, 9, 11


def _pixel_rois(scale: float) -> np.ndarray:
    r = 9
    xy = RNG.random((r, 2)) * np.array([W, H]) / scale
    wh = RNG.random((r, 2)) * 7 / scale
    rois = np.concatenate([RNG.integers(0, N, (r, 1)), xy, xy + wh], 1)
    rois[0, 1:] = [2.5, 1.5, 6.5, 4.5]  # halves: rounded away from zero
    rois[1, 1:] = [-6, -5, -1, -2]  # outside the map
    rois[2, 1:] = [W - 2, H - 3, W + 4, H + 6]  # over the far edges
    rois[3, 1:] = [3, 3, 3, 3]  # one cell
    rois[4, 1:] = [7, 6, 2, 1]  # reversed
    return rois.astype(F)


def _unit_rois() -> np.ndarray:
    r = 8
    a = RNG.random((r, 2))
    rois = np.concatenate([RNG.integers(0, N, (r, 1)), a, a + RNG.random((r, 2)) * 0.6], 1)
    rois[0, 1:] = [0, 0, 1, 1]
    rois[1, 1:] = [0.5, 0.5, 0.5, 0.5]
    rois[2, 1:] = [-0.3, 0.2, 0.4, 1.3]  # samples outside the map
    return rois.astype(F)


def _ended(rois: np.ndarray, at: int) -> np.ndarray:
    out = rois.copy()
    out[at, 0] = -1
    out[at + 1, 0] = 0  # rows after the end pool to zeros whatever they say
    return out


def _case(name: str, rois: np.ndarray, size: list[int], scale: float, method: str, dtype: type = F) -> Case:
    data = RNG.standard_normal((N, C, H, W)).astype(dtype)
    return Case(name, lambda x, r: ops2.roi_pooling(x, r, size, scale, method),
                [((N, C, H, W), dtype), (rois.shape, dtype)], values=[data, rois.astype(dtype)])


CASES = []
for size in ([3, 2], [1, 1], [4, 5], [1, 3]):
    tag = "x".join(map(str, size))
    for scale in (1.0, 0.5, 0.0625):
        CASES.append(_case(f"roi-pool-max-{tag}-scale{scale}", _pixel_rois(scale), size, scale, "max"))
    CASES.append(_case(f"roi-pool-bilinear-{tag}", _unit_rois(), size, 1.0, "bilinear"))
CASES += [
    _case("roi-pool-max-ended", _ended(_pixel_rois(1.0), 5), [2, 2], 1.0, "max"),
    _case("roi-pool-bilinear-ended", _ended(_unit_rois(), 3), [2, 3], 1.0, "bilinear"),
    _case("roi-pool-max-f16", _pixel_rois(1.0), [3, 3], 1.0, "max", F16),
    _case("roi-pool-bilinear-f16", _unit_rois(), [3, 3], 1.0, "bilinear", F16),
    _case("roi-pool-max-big-bins", np.array([[1, 0, 0, 10, 8], [0, 1, 2, 9, 8]], F), [2, 3], 1.0, "max"),
]


@pytest.mark.parametrize("case", params(CASES))
def test_roi_pooling(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)
