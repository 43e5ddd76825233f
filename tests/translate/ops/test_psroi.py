"""PSROIPooling-1 and DeformablePSROIPooling-1 (psroi.py) against OpenVINO: average and bilinear modes, group
sizes, spatial bins, spatial scales, ROIs with halves in the rounding, outside the map, over its edges, reversed
and tiny, the -1 batch id ending the ROIs, run-time ROIs and offsets, classes in the offsets, trans_std, part_size, f16."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino.opset1 as ops1
import pytest

from tests.translate.ops.cases import Case, const, params, run_case

F = np.float32
RNG = np.random.default_rng(57)
N, H, W = 2, 9, 11


def _pixel_rois(r: int, scale: float, end: bool = False) -> np.ndarray:
    xy = RNG.random((r, 2)) * np.array([W, H]) / scale
    wh = RNG.random((r, 2)) * 8 / scale
    rois = np.concatenate([RNG.integers(0, N, (r, 1)), xy, xy + wh], 1)
    rois[0, 1:] = [2.5, 1.5, 6.5, 4.5]  # halves: rounded away from zero
    rois[1, 1:] = [-6, -5, -1, -2]  # outside the map
    rois[2, 1:] = [W - 2, H - 3, W + 4, H + 6]  # over the far edges
    rois[3, 1:] = [3, 3, 3, 3]  # one cell
    rois[4, 1:] = [7, 6, 2, 1]  # reversed
    rois[5, 1:] = [1.2, 0.7, 1.4, 0.9]  # tiny
    if end:
        rois[-3, 0] = -1  # ends the ROIs: it and later rows pool to 0
    return rois.astype(F)


def _unit_rois(r: int, end: bool = False) -> np.ndarray:
    a = RNG.random((r, 2))
    rois = np.concatenate([RNG.integers(0, N, (r, 1)), a, a + RNG.random((r, 2)) * 0.7], 1)
    rois[0, 1:] = [0, 0, 1, 1]
    rois[1, 1:] = [0.5, 0.5, 0.5, 0.5]
    rois[2, 1:] = [-0.3, 0.2, 0.4, 1.3]  # samples outside the map
    rois[3, 1:] = [0.8, 0.9, 0.1, 0.2]  # reversed
    if end:
        rois[-2, 0] = -1
    return rois.astype(F)


def _psroi(name: str, mode: str, d: int, g: int, scale: float, bx: int = 1, by: int = 1, end: bool = False,
           runtime: bool = False) -> Case:
    c = d * g * g if mode == "average" else d * bx * by
    rois = _pixel_rois(9, scale, end) if mode == "average" else _unit_rois(8, end)
    x = RNG.standard_normal((N, c, H, W)).astype(F)
    if runtime:
        return Case(name, lambda p, r: ops1.psroi_pooling(p, r, d, g, scale, bx, by, mode),
                    [((N, c, H, W), F), (rois.shape, F)], values=[x, rois])
    return Case(name, lambda p: ops1.psroi_pooling(p, const(rois), d, g, scale, bx, by, mode), [((N, c, H, W), F)],
                values=[x])


CASES = [
    _psroi("psroi-avg-d2-g3", "average", 2, 3, 1.0),
    _psroi("psroi-avg-d3-g2-scale0.5", "average", 3, 2, 0.5),
    _psroi("psroi-avg-d1-g1", "average", 1, 1, 1.0),
    _psroi("psroi-avg-g4-scale0.25-end", "average", 2, 4, 0.25, end=True),
    _psroi("psroi-avg-runtime-rois", "average", 2, 3, 0.5, runtime=True, end=True),
    _psroi("psroi-avg-bins-ignored", "average", 2, 2, 1.0, bx=3, by=2),
    _psroi("psroi-bilinear-d2-g3-bins2x2", "bilinear", 2, 3, 1.0, bx=2, by=2),
    _psroi("psroi-bilinear-d3-g1-bins3x2", "bilinear", 3, 1, 1.0, bx=3, by=2),
    _psroi("psroi-bilinear-g2-bins1x1-scale0.5", "bilinear", 2, 2, 0.5),
    _psroi("psroi-bilinear-g4-bins1x3-end", "bilinear", 1, 4, 1.0, bx=1, by=3, end=True),
    _psroi("psroi-bilinear-runtime-rois", "bilinear", 2, 3, 1.0, bx=2, by=1, runtime=True, end=True),
]


def _deform(name: str, d: int, g: int, scale: float, *, bx: int = 1, by: int = 1, part: int = 1,
            trans_std: float = 1.0, classes: int = 0, end: bool = False, runtime: bool = False) -> Case:
    rois = _pixel_rois(9, scale, end)
    x = RNG.standard_normal((N, d * g * g, H, W)).astype(F)
    inputs = [((N, d * g * g, H, W), F)]
    values = [x]
    offsets = (RNG.standard_normal((rois.shape[0], 2 * classes, part, part)) * 0.3).astype(F) if classes else None
    if runtime:
        inputs.append((rois.shape, F))
        values.append(rois)
        if offsets is not None:
            inputs.append((offsets.shape, F))
            values.append(offsets)

    def build(p, *rest):  # type: ignore[no-untyped-def]
        r = rest[0] if runtime else const(rois)
        off = None if offsets is None else (rest[1] if runtime else const(offsets))
        return ops1.deformable_psroi_pooling(p, r, d, scale, g, "bilinear_deformable", bx, by, trans_std, part,
                                             offsets=off)

    return Case(name, build, inputs, values=values)


CASES += [
    _deform("dpsroi-no-offsets-d2-g3", 2, 3, 1.0),
    _deform("dpsroi-no-offsets-bins2x3-scale0.5", 3, 2, 0.5, bx=2, by=3),
    _deform("dpsroi-no-offsets-g1-end", 2, 1, 1.0, bx=2, by=2, end=True),
    _deform("dpsroi-offsets-1class-part3", 2, 3, 1.0, part=3, classes=1, bx=2, by=2),
    _deform("dpsroi-offsets-2class-part2-std0.1", 4, 3, 0.5, part=2, classes=2, trans_std=0.1, bx=1, by=2),
    _deform("dpsroi-offsets-4class-part5-g2", 4, 2, 1.0, part=5, classes=4, trans_std=0.7, bx=3, by=1),
    _deform("dpsroi-offsets-runtime-end", 2, 3, 0.5, part=3, classes=2, bx=2, by=2, runtime=True, end=True),
    _deform("dpsroi-no-offsets-runtime", 2, 2, 1.0, bx=2, by=2, runtime=True),
    _deform("dpsroi-offsets-std0", 2, 2, 1.0, part=2, classes=1, trans_std=0.0),
]


F16_ROIS = np.array([[0, 1, 1, 6, 5], [1, 2.5, 0.5, 8, 7], [-1, 0, 0, 3, 3]], F)
CASES += [
    Case("psroi-avg-f16", lambda x: ops1.psroi_pooling(x, const(F16_ROIS, np.float16), 2, 2, 1.0, 1, 1, "average"),
         [((N, 8, H, W), np.float16)], rtol=1e-3, atol=1e-3),
    Case("dpsroi-f16", lambda x: ops1.deformable_psroi_pooling(x, const(F16_ROIS, np.float16), 2, 1.0, 2,
                                                               "bilinear_deformable", 2, 2, 1.0, 1),
         [((N, 8, H, W), np.float16)], rtol=1e-3, atol=1e-3),
]


@pytest.mark.parametrize("case", params(CASES))
def test_psroi(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)
