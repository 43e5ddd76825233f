"""NonMaxSuppression v1/v3/v4/v5/v9 (nms.py, nms_soft.py) against OpenVINO: ties, threshold equality, flipped and
centre boxes, run-time thresholds, both sort orders, output types, soft NMS."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino.opset1 as ops1
import openvino.opset3 as ops3
import openvino.opset4 as ops4
import openvino.opset5 as ops5
import openvino.opset9 as ops9
import pytest

from tests.translate.ops.cases import Case, const, params, run_case
from tests.translate.ops.reference import run_against_numpy

F, F16, I32, I64 = np.float32, np.float16, np.int32, np.int64
RNG = np.random.default_rng(11)

# one batch, 5 boxes: 0 and 1 identical, IoU(0, 2) = 0.5 exactly, 3 disjoint, 4 overlapping 0
TIE_BOXES = np.array([[[0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 1, 2], [0, 5, 1, 6], [0, 0.1, 1, 1.1]]], F)
TIE_SCORES = np.array([[[0.9, 0.9, 0.5, 0.3, 0.7], [0.2, 0.8, 0.8, 0.95, 0.1]]], F)


def _random(batches: int, classes: int, n: int, center: bool, flip: bool = False) -> list[np.ndarray]:
    xy = RNG.random((batches, n, 2)).astype(F) * 4
    wh = RNG.random((batches, n, 2)).astype(F) * 2
    boxes = np.concatenate([xy, wh] if center else [xy, xy + wh], -1)
    if flip:
        boxes = boxes[..., [2, 3, 0, 1]]
    scores = np.round(RNG.random((batches, classes, n)), 1).astype(F)  # many ties
    return [boxes, scores]


def _case(name: str, make, data: list[np.ndarray], dtype: type = F, extra: list | None = None) -> Case:
    shapes = [(data[0].shape, dtype), (data[1].shape, dtype)] + [(e.shape, e.dtype.type) for e in extra or []]
    values = [d.astype(dtype) for d in data] + list(extra or [])
    return Case(name, make, shapes, values=values)


def _thr(mx: int, iou: float, score: float) -> list:
    return [const(mx, I64), const(iou, F), const(score, F)]


CASES = [
    _case("nms1-ties", lambda b, s: ops1.non_max_suppression(b, s, *_thr(10, 0.5, 0.3)), [TIE_BOXES, TIE_SCORES]),
    _case("nms1-unsorted", lambda b, s: ops1.non_max_suppression(b, s, *_thr(10, 0.5, 0.3), "corner", False),
          [TIE_BOXES, TIE_SCORES]),
    _case("nms3-i32", lambda b, s: ops3.non_max_suppression(b, s, *_thr(2, 0.5, 0.0), output_type="i32"),
          [TIE_BOXES, TIE_SCORES]),
    _case("nms4-iou1", lambda b, s: ops4.non_max_suppression(b, s, *_thr(10, 1.0, 0.0)), [TIE_BOXES, TIE_SCORES]),
    _case("nms5-iou0", lambda b, s: ops5.non_max_suppression(b, s, *_thr(10, 0.0, 0.0)), [TIE_BOXES, TIE_SCORES]),
    _case("nms5-iou-negative", lambda b, s: ops5.non_max_suppression(b, s, *_thr(10, -0.5, 0.0)),
          [TIE_BOXES, TIE_SCORES]),
    _case("nms5-iou-above-one", lambda b, s: ops5.non_max_suppression(b, s, *_thr(10, 1.5, 0.0)),
          [TIE_BOXES, TIE_SCORES]),
    _case("nms5-sigma0-i32", lambda b, s: ops5.non_max_suppression(b, s, *_thr(3, 0.5, 0.3), const(0.0, F),
                                                                   output_type="i32"), [TIE_BOXES, TIE_SCORES]),
    _case("nms9-defaults", lambda b, s: ops9.non_max_suppression(b, s, const(10, I64)), [TIE_BOXES, TIE_SCORES]),
    _case("nms9-runtime-thresholds", lambda b, s, m, i, t: ops9.non_max_suppression(b, s, m, i, t),
          _random(2, 3, 20, False), extra=[np.array(4, I64), np.array(0.4, F), np.array(0.2, F)]),
    _case("nms9-runtime-iou0", lambda b, s, m, i: ops9.non_max_suppression(b, s, m, i),
          [TIE_BOXES, TIE_SCORES], extra=[np.array([5], I32), np.array([0.0], F)]),
    _case("nms9-runtime-iou-exact", lambda b, s, i: ops9.non_max_suppression(b, s, const(9, I64), i),
          [TIE_BOXES, TIE_SCORES], extra=[np.array(0.5, F)]),
    _case("nms9-f16", lambda b, s: ops9.non_max_suppression(b, s, *_thr(5, 0.5, 0.1)), _random(1, 2, 12, False),
          dtype=F16),
]
for seed_case, (center, flip, sort) in enumerate([(False, False, True), (False, True, False), (True, False, True),
                                                   (True, False, False), (False, False, False)]):
    enc = "center" if center else "corner"
    data = _random(2, 3, 25, center, flip)
    for v, mod in ((1, ops1), (4, ops4), (5, ops5), (9, ops9)):
        CASES.append(_case(f"nms{v}-random-{enc}{'-flipped' if flip else ''}-{'sorted' if sort else 'unsorted'}",
                           lambda b, s, mod=mod, enc=enc, sort=sort, k=seed_case: mod.non_max_suppression(
                               b, s, *_thr(4 + k, 0.3 + 0.1 * k, 0.1 * (k % 3)), box_encoding=enc,
                               sort_result_descending=sort), data))


@pytest.mark.parametrize("case", params(CASES))
def test_nms(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)


def _soft(mx: int, iou: float, score: float, sigma: float) -> list:
    return [*_thr(mx, iou, score), const(sigma, F)]


# duplicated boxes and scores: equal decayed scores, ties broken by box index
DUP = _random(2, 3, 16, False)
DUP[0][:, 5], DUP[0][:, 9] = DUP[0][:, 2], DUP[0][:, 2]
DUP[1][..., 5], DUP[1][..., 9] = DUP[1][..., 2], DUP[1][..., 2]

SOFT = [
    _case("soft9-ties", lambda b, s: ops9.non_max_suppression(b, s, *_soft(10, 0.5, 0.0, 0.5)),
          [TIE_BOXES, TIE_SCORES]),
    _case("soft9-ties-threshold", lambda b, s: ops9.non_max_suppression(b, s, *_soft(10, 0.5, 0.35, 0.5)),
          [TIE_BOXES, TIE_SCORES]),
    _case("soft9-duplicates", lambda b, s: ops9.non_max_suppression(b, s, *_soft(12, 0.3, 0.05, 0.3)), DUP),
    _case("soft9-duplicates-unsorted", lambda b, s: ops9.non_max_suppression(
        b, s, *_soft(12, 0.3, 0.05, 0.3), sort_result_descending=False), DUP),
    _case("soft5-i32-unsorted", lambda b, s: ops5.non_max_suppression(
        b, s, *_soft(4, 0.5, 0.1, 1.0), sort_result_descending=False, output_type="i32"), _random(2, 2, 10, False)),
    _case("soft5-center", lambda b, s: ops5.non_max_suppression(b, s, *_soft(6, 0.5, 0.1, 0.2), "center"),
          _random(1, 3, 20, True)),
    _case("soft9-flipped-small-sigma", lambda b, s: ops9.non_max_suppression(b, s, *_soft(20, 0.0, 0.0, 0.05)),
          _random(2, 2, 15, False, flip=True)),
    _case("soft9-max-above-boxes", lambda b, s: ops9.non_max_suppression(b, s, *_soft(100, 0.5, 0.2, 0.5)),
          _random(1, 2, 7, False)),
    _case("soft9-negative-score-threshold", lambda b, s: ops9.non_max_suppression(
        b, s, *_soft(8, 0.5, -1.0, 0.4)), _random(1, 2, 9, False)),
    _case("soft9-sigma-negative-is-hard", lambda b, s: ops9.non_max_suppression(b, s, *_soft(5, 0.4, 0.1, -1.0)),
          _random(2, 2, 12, False)),
    _case("soft9-f16", lambda b, s: ops9.non_max_suppression(b, s, *_soft(5, 0.5, 0.1, 0.5)),
          _random(1, 2, 12, False), dtype=F16),
    _case("soft9-runtime-all", lambda b, s, m, i, t, g: ops9.non_max_suppression(b, s, m, i, t, g),
          _random(2, 3, 20, False), extra=[np.array(5, I64), np.array(0.4, F), np.array(0.15, F), np.array(0.5, F)]),
    _case("soft9-runtime-center", lambda b, s, m, g: ops9.non_max_suppression(
        b, s, m, const(0.5, F), const(0.0, F), g, box_encoding="center"),
          _random(1, 2, 14, True), extra=[np.array([7], I32), np.array([0.3], F)]),
    _case("soft9-runtime-sigma0", lambda b, s, g: ops9.non_max_suppression(b, s, *_thr(6, 0.5, 0.1), g),
          [TIE_BOXES, TIE_SCORES], extra=[np.array(0.0, F)]),
    _case("soft9-runtime-sigma-negative", lambda b, s, g: ops9.non_max_suppression(b, s, *_thr(6, 0.3, 0.0), g),
          _random(2, 2, 12, False), extra=[np.array(-0.5, F)]),
    _case("soft9-runtime-sigma-iou0", lambda b, s, g: ops9.non_max_suppression(b, s, *_thr(6, 0.0, 0.0), g),
          [TIE_BOXES, TIE_SCORES], extra=[np.array(0.0, F)]),
]


@pytest.mark.parametrize("case", params(SOFT))
def test_soft_nms(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)


EMPTY = [
    _case("nms9-no-inputs", lambda b, s: ops9.non_max_suppression(b, s), [TIE_BOXES, TIE_SCORES]),
    _case("nms9-max0", lambda b, s: ops9.non_max_suppression(b, s, *_thr(0, 0.5, 0.0)), [TIE_BOXES, TIE_SCORES]),
    _case("nms5-all-below-threshold", lambda b, s: ops5.non_max_suppression(b, s, *_thr(5, 0.5, 0.99)),
          [TIE_BOXES, TIE_SCORES]),
    _case("soft9-all-below-threshold", lambda b, s: ops9.non_max_suppression(b, s, *_soft(5, 0.5, 0.99, 0.5)),
          [TIE_BOXES, TIE_SCORES]),
    _case("soft9-max0", lambda b, s: ops9.non_max_suppression(b, s, *_soft(0, 0.5, 0.0, 0.5)),
          [TIE_BOXES, TIE_SCORES]),
    _case("soft9-no-boxes", lambda b, s: ops9.non_max_suppression(b, s, *_soft(3, 0.5, 0.0, 0.5)),
          [np.zeros((2, 0, 4), F), np.zeros((2, 3, 0), F)]),
    _case("soft9-runtime-nothing-selected", lambda b, s, m, g: ops9.non_max_suppression(
        b, s, m, const(0.5, F), const(0.95, F), g), [TIE_BOXES, TIE_SCORES],
          extra=[np.array(3, I64), np.array(0.5, F)]),
]


@pytest.mark.parametrize("case", params(EMPTY))
def test_nms_nothing_selected(tmp_path: Path, case: Case) -> None:
    """No box selected: OpenVINO's CPU plugin returns the empty rows but leaves valid_outputs uninitialised (e.g.
    1065353216, the bits of 1.0f), so numpy's answer (0) is the reference."""
    run_against_numpy(case, tmp_path, lambda *v: [np.zeros((0, 3), I64), np.zeros((0, 3), F), np.zeros(1, I64)])
