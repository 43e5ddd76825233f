"""MulticlassNms-8/9 (nms_multiclass.py, nms_rows.py) against OpenVINO: both input forms (shared boxes; per-class
boxes with a run-time roisnum), every sort mode, keep_top_k / nms_top_k cuts, background class, nms_eta, unnormalized
boxes, output types, ties and empty results."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino.opset8 as ops8
import openvino.opset9 as ops9
import pytest

from tests.translate.ops.cases import Case, params, run_case
from tests.translate.ops.reference import run_against_numpy

F, F16, I32, I64 = np.float32, np.float16, np.int32, np.int64
RNG = np.random.default_rng(23)


def _boxes(lead: int, m: int, scale: float = 1.0, dup: bool = False) -> np.ndarray:
    xy = RNG.random((lead, m, 2)).astype(F) * 0.6 * scale
    wh = RNG.random((lead, m, 2)).astype(F) * 0.5 * scale
    boxes = np.concatenate([xy, xy + wh], -1)
    if dup:  # equal boxes with equal scores: ties broken by box index
        boxes[:, 3], boxes[:, 6] = boxes[:, 1], boxes[:, 1]
    return boxes


def _scores(shape: tuple[int, ...], dup: bool = False) -> np.ndarray:
    s = np.round(RNG.random(shape), 1).astype(F)  # many equal scores
    if dup:
        s[..., 3], s[..., 6] = s[..., 1], s[..., 1]
    return s


def shared(name: str, attrs: dict, b: int = 2, c: int = 3, m: int = 10, v8: bool = False, scale: float = 1.0,
           dup: bool = False, dtype: type = F, data: list[np.ndarray] | None = None) -> Case:
    data = data or [_boxes(b, m, scale, dup), _scores((b, c, m), dup)]
    mod = ops8 if v8 else ops9
    return Case(name, lambda bx, sc: mod.multiclass_nms(bx, sc, **attrs),
                [(data[0].shape, dtype), (data[1].shape, dtype)], values=[d.astype(dtype) for d in data])


def per_class(name: str, attrs: dict, rois: list[int], c: int = 3, m: int = 12, dup: bool = False,
              rois_type: type = I32) -> Case:
    data = [_boxes(c, m, 1.0, dup), _scores((c, m), dup), np.array(rois, rois_type)]
    return Case(name, lambda bx, sc, r: ops9.multiclass_nms(bx, sc, r, **attrs),
                [(d.shape, d.dtype.type) for d in data], values=data)


# the eta quirk: box 2 (score == score_threshold) overlaps box 0 but is compared with the last selection only
QUIRK = [np.array([[[0, 0, 1, 1], [5, 5, 6, 6], [0, 0, 1, 1.05], [0, 0, 1, 1.05]]], F),
         np.array([[[0.9, 0.8, 0.3, 0.35]]], F)]

CASES = [
    shared("v9-defaults", {}),
    shared("v8-defaults", {}, v8=True),
    shared("v8-score-across-i32", {"sort_result_type": "score", "sort_result_across_batch": True,
                                   "output_type": "i32", "iou_threshold": 0.5}, v8=True),
    shared("v9-score-within", {"sort_result_type": "score", "iou_threshold": 0.5, "score_threshold": 0.2}),
    shared("v9-classid-within", {"sort_result_type": "classid", "iou_threshold": 0.4}),
    shared("v9-classid-across", {"sort_result_type": "classid", "sort_result_across_batch": True,
                                 "iou_threshold": 0.4}),
    shared("v9-none-across", {"sort_result_type": "none", "sort_result_across_batch": True, "iou_threshold": 0.6}),
    shared("v9-keep-top-k", {"sort_result_type": "score", "sort_result_across_batch": True, "keep_top_k": 4,
                             "iou_threshold": 0.5}, b=3),
    shared("v9-keep-top-k-classid", {"sort_result_type": "classid", "keep_top_k": 3, "iou_threshold": 0.5}),
    shared("v9-nms-top-k", {"nms_top_k": 2, "iou_threshold": 0.5, "sort_result_type": "score"}),
    shared("v9-nms-top-k-above-boxes", {"nms_top_k": 100, "keep_top_k": 100, "iou_threshold": 0.3}),
    shared("v9-background", {"background_class": 1, "iou_threshold": 0.5, "sort_result_type": "classid"}),
    shared("v9-background-out-of-range", {"background_class": 7, "iou_threshold": 0.5}),
    shared("v9-eta", {"nms_eta": 0.9, "iou_threshold": 0.7, "score_threshold": 0.3, "sort_result_type": "score"},
           m=16),
    shared("v9-eta-zero", {"nms_eta": 0.0, "iou_threshold": 0.6}),
    shared("v9-eta-score-at-threshold", {"nms_eta": 0.9, "iou_threshold": 0.4, "score_threshold": 0.3},
           data=QUIRK),
    shared("v9-no-eta-score-at-threshold", {"iou_threshold": 0.4, "score_threshold": 0.3}, data=QUIRK),
    shared("v9-unnormalized", {"normalized": False, "iou_threshold": 0.3, "sort_result_type": "score"}, scale=10),
    shared("v9-iou0", {"iou_threshold": 0.0}),
    shared("v9-iou1", {"iou_threshold": 1.0, "sort_result_type": "classid"}),
    shared("v9-ties", {"iou_threshold": 0.5, "sort_result_type": "score", "sort_result_across_batch": True},
           dup=True),
    shared("v9-ties-classid", {"iou_threshold": 0.99, "sort_result_type": "classid"}, dup=True),
    shared("v9-f16", {"iou_threshold": 0.5, "sort_result_type": "score"}, dtype=F16),
    per_class("v9-rois", {"iou_threshold": 0.5}, [5, 7]),
    per_class("v9-rois-empty-batch", {"iou_threshold": 0.5, "sort_result_type": "score"}, [4, 0, 8]),
    per_class("v9-rois-partial-i64", {"iou_threshold": 0.4, "sort_result_type": "classid",
                                      "sort_result_across_batch": True, "output_type": "i32"}, [3, 6], rois_type=I64),
    per_class("v9-rois-keep-top-k", {"iou_threshold": 0.5, "keep_top_k": 3, "background_class": 0,
                                     "sort_result_type": "score", "sort_result_across_batch": True}, [6, 6], dup=True),
    per_class("v9-rois-eta-nms-top-k", {"iou_threshold": 0.8, "nms_eta": 0.8, "nms_top_k": 3,
                                        "score_threshold": 0.2}, [12]),
    shared("v9-nothing-above-threshold", {"score_threshold": 0.95, "iou_threshold": 0.5},
           data=[_boxes(2, 4), np.full((2, 3, 4), 0.5, F)]),
    shared("v9-keep-top-k-0", {"keep_top_k": 0, "sort_result_type": "score"}),
    shared("v9-only-background", {"background_class": 0}, c=1),
]


@pytest.mark.parametrize("case", params(CASES))
def test_multiclass_nms(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)


@pytest.mark.parametrize("case", params([
    shared("v9-nms-top-k-0", {"nms_top_k": 0}),
    shared("v8-nms-top-k-0-i32", {"nms_top_k": 0, "output_type": "i32"}, v8=True),
    shared("v9-no-boxes", {"iou_threshold": 0.5}, data=[np.zeros((2, 0, 4), F), np.zeros((2, 3, 0), F)]),
]))
def test_multiclass_nms_nothing_visited(tmp_path: Path, case: Case) -> None:
    """nms_top_k=0 or no boxes: OpenVINO's CPU plugin returns before writing any output, so selected_num is
    uninitialised; numpy's answer (no rows, zero counts) is the reference."""
    idx = I32 if "i32" in case.name else I64
    batches = case.values[1].shape[0]
    run_against_numpy(case, tmp_path, lambda *v: [np.zeros((0, 6), F), np.zeros((0, 1), idx), np.zeros(batches, idx)])
