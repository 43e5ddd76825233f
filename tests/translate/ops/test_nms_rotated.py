"""NMSRotated-13 (nms_rotated.py) against OpenVINO: both rotation senses, both sort orders, output types, run-time
thresholds, duplicated and zero-area boxes, negative and zero IoU thresholds, nothing selected."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino.opset13 as ops13
import pytest

from tests.translate.ops.cases import Case, const, params, run_case
from tests.translate.ops.reference import run_against_numpy

F, F16, I32, I64 = np.float32, np.float16, np.int32, np.int64
RNG = np.random.default_rng(41)


def _data(b: int, c: int, n: int, ties: bool = False, spread: float = 4.0) -> list[np.ndarray]:
    xy = RNG.random((b, n, 2)) * spread
    wh = RNG.random((b, n, 2)) * 2 + 0.1
    angle = (RNG.random((b, n, 1)) - 0.5) * 4
    scores = RNG.random((b, c, n))
    return [np.concatenate([xy, wh, angle], -1).astype(F), (np.round(scores, 1) if ties else scores).astype(F)]


DUP = _data(2, 2, 12, ties=True)
DUP[0][:, 4], DUP[0][:, 7] = DUP[0][:, 1], DUP[0][:, 1]  # identical boxes (IoU 1)
ZERO = _data(1, 2, 10)
ZERO[0][:, [2, 5], 2] = 0  # zero width: overlaps nothing


def case(name: str, data: list[np.ndarray], mx: int, iou: float, score: float, dtype: type = F,
         **attrs: object) -> Case:
    return Case(name, lambda b, s: ops13.nms_rotated(b, s, const(mx, I64), const(iou, F), const(score, F), **attrs),
                [(data[0].shape, dtype), (data[1].shape, dtype)], values=[d.astype(dtype) for d in data])


def runtime(name: str, data: list[np.ndarray], mx: int, iou: float, score: float, **attrs: object) -> Case:
    extra = [np.array(mx, I32), np.array([iou], F), np.array(score, F)]
    values = data + extra
    return Case(name, lambda b, s, m, i, t: ops13.nms_rotated(b, s, m, i, t, **attrs),
                [(v.shape, v.dtype.type) for v in values], values=values)


CASES = [
    case("defaults", _data(2, 3, 15), 5, 0.5, 0.0),
    case("counterclockwise", _data(2, 2, 20, spread=2.0), 6, 0.3, 0.1, clockwise=False),
    case("unsorted-i32", _data(2, 3, 12, ties=True), 4, 0.4, 0.2, sort_result_descending=False, output_type="i32"),
    case("sorted-ties", _data(3, 2, 10, ties=True), 10, 0.2, 0.0),
    case("dense", _data(1, 2, 30, spread=2.0), 30, 0.1, 0.0),
    case("dense-ccw-unsorted", _data(1, 2, 30, spread=2.0), 8, 0.3, 0.0, clockwise=False,
         sort_result_descending=False),
    case("duplicates", DUP, 12, 0.5, 0.0),
    case("iou0", _data(1, 2, 12), 12, 0.0, 0.0),
    case("iou-negative", _data(1, 2, 8), 8, -0.1, 0.0),
    case("zero-area", ZERO, 10, 0.3, 0.0),
    case("zero-area-iou-negative", ZERO, 10, -0.1, 0.0),
    case("max-above-boxes", _data(2, 1, 6), 100, 0.5, 0.3),
    case("nothing-above-threshold", [_data(1, 2, 5)[0], np.full((1, 2, 5), 0.2, F)], 5, 0.5, 0.5),
    case("f16", _data(1, 2, 10), 5, 0.5, 0.1, dtype=F16),
    runtime("runtime-thresholds", _data(2, 2, 14), 6, 0.3, 0.2),
    runtime("runtime-ccw-unsorted", _data(1, 3, 14, spread=2.0), 5, 0.1, 0.0, clockwise=False, sort_result_descending=False),
]


@pytest.mark.parametrize("case", params(CASES))
def test_nms_rotated(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)


@pytest.mark.parametrize("case", params([case("max0", _data(1, 2, 6), 0, 0.5, 0.0),
                                         runtime("runtime-max0", _data(2, 2, 6), 0, 0.5, 0.0),
                                         case("no-boxes", [np.zeros((1, 0, 5), F), np.zeros((1, 2, 0), F)], 5, 0.5,
                                              0.0)]))
def test_nms_rotated_nothing_visited(tmp_path: Path, case: Case) -> None:
    """max_output_boxes_per_class = 0 or no boxes: OpenVINO's CPU plugin returns the empty rows but leaves
    valid_outputs uninitialised, so numpy's answer (0) is the reference."""
    run_against_numpy(case, tmp_path, lambda *v: [np.zeros((0, 3), I64), np.zeros((0, 3), F), np.zeros(1, I64)])
