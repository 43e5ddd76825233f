"""DetectionOutput-1/8 (detection.py) against OpenVINO: both code types, shared and per-class locations, background
classes, top_k / keep_top_k limits (and images with fewer detections), variances in the priors or in the target,
unnormalized priors ended by -1, per-image priors, clipping before and after NMS, the MXNet style
(decrease_label_id), the two-stage ARM form, NMS thresholds 0 and 1, score ties and duplicated boxes, f16."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import openvino.opset1 as ops1
import openvino.opset8 as ops8
import pytest

import ir2onnx
from ir2onnx.errors import LayerConversionError
from tests.translate.ops.cases import Case, params, run_case
from tests.translate.ops.reference import run_against_numpy

F, F16 = np.float32, np.float16
CENTER, CORNER = "caffe.PriorBoxParameter.CENTER_SIZE", "caffe.PriorBoxParameter.CORNER"


def _data(seed: int, n: int, p: int, c: int, share: bool = True, normalized: bool = True, vit: bool = False,
          per_image: bool = False, arm: bool = False, ties: bool = True, end: int | None = None) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    lc = 1 if share else c
    loc = rng.normal(0, 0.4, (n, p * lc * 4)).astype(F)
    conf = rng.random((n, p * c))
    if ties:  # equal scores across priors and classes, but never twice within one prior: OpenVINO orders equal
        # (score, prior) pairs of different classes arbitrarily (a parallel collection, then an unstable sort)
        conf = np.round(conf, 1).reshape(n, p, c)
        for img in range(n):
            for pr in range(p):
                _, first = np.unique(conf[img, pr], return_index=True)
                dup = np.setdiff1d(np.arange(c), first)
                conf[img, pr, dup] += 0.003 * (dup + 1)
        conf = conf.reshape(n, p * c)
    conf = conf.astype(F)
    np_ = n if per_image else 1
    xy = rng.random((np_, p, 2)) * 0.7
    corners = np.concatenate([xy, xy + 0.05 + rng.random((np_, p, 2)) * 0.3], -1)
    if ties:  # duplicated priors: equal boxes with equal scores
        corners[:, 1] = corners[:, 0]
    if not normalized:
        corners = corners * np.array([300, 200, 300, 200])
        ids = np.zeros((np_, p, 1))
        if end is not None:
            ids[:, end:] = -1
        corners = np.concatenate([ids, corners], -1)
    rows = [corners.reshape(np_, -1)]
    if not vit:
        var = np.tile(np.array([0.1, 0.1, 0.2, 0.2]), (np_, p * (4 if normalized else 5) // 4 + 1))
        rows.append(var[:, : rows[0].shape[1]])
    priors = np.stack(rows, 1).astype(F)
    out = [loc, conf, priors]
    if arm:
        out += [rng.random((n, p * 2)).astype(F), rng.normal(0, 0.3, (n, p * lc * 4)).astype(F)]
    return out


def _case(name: str, data: list[np.ndarray], dtype: type = F, version: int = 8, **attrs: Any) -> Case:
    base = {"background_label_id": 0, "top_k": -1, "keep_top_k": [-1], "code_type": CENTER, "nms_threshold": 0.45,
            "confidence_threshold": 0.05, "normalized": True}
    base.update(attrs)

    def build(*ps: Any) -> Any:
        if version == 1:
            a = dict(base, num_classes=data[1].shape[1] // (data[2].shape[2] // (4 if base["normalized"] else 5)))
            return ops1.detection_output(ps[0], ps[1], ps[2], a, *ps[3:])
        return ops8.detection_output(ps[0], ps[1], ps[2], base, *ps[3:])

    return Case(name, build, [(d.shape, dtype) for d in data], values=[d.astype(dtype) for d in data])


D = _data(0, 2, 12, 4)
CASES = [
    _case("do8-center-defaults", D),
    _case("do1-center-defaults", D, version=1),
    _case("do8-corner", D, code_type=CORNER),
    _case("do1-corner-topk-keep", D, version=1, code_type=CORNER, top_k=5, keep_top_k=[6]),
    _case("do8-topk3", D, top_k=3),
    _case("do8-topk0", D, top_k=0, keep_top_k=[4]),
    _case("do8-keep-top-k-above-total", D, keep_top_k=[40]),
    _case("do8-keep-top-k-small", D, top_k=6, keep_top_k=[3]),
    _case("do8-background-none", D, background_label_id=-1, keep_top_k=[10]),
    _case("do8-background-2", D, background_label_id=2, top_k=5),
    _case("do8-nms0", D, nms_threshold=0.0, keep_top_k=[20]),
    _case("do8-nms1", D, nms_threshold=1.0, keep_top_k=[20]),
    _case("do8-threshold-high", D, confidence_threshold=0.85),
    _case("do8-threshold-none-above", D, confidence_threshold=1.0, keep_top_k=[5]),
    _case("do8-clip-before", D, clip_before_nms=True, keep_top_k=[8]),
    _case("do8-clip-after", D, clip_after_nms=True, top_k=7),
    _case("do8-mxnet", D, decrease_label_id=True, keep_top_k=[8]),
    _case("do8-mxnet-topk", D, decrease_label_id=True, top_k=5, keep_top_k=[8]),
    _case("do8-mxnet-topk-corner-threshold-0", D, decrease_label_id=True, top_k=9, code_type=CORNER,
          confidence_threshold=0.0),
    _case("do8-f16", D, dtype=F16, keep_top_k=[9]),
]
D_LOC = _data(1, 2, 10, 3, share=False)
CASES += [
    _case("do8-per-class-loc", D_LOC, share_location=False, keep_top_k=[7]),
    _case("do1-per-class-loc-corner", D_LOC, version=1, share_location=False, code_type=CORNER, top_k=4),
    _case("do8-per-class-loc-mxnet", D_LOC, share_location=False, decrease_label_id=True, top_k=6),
]
D_VIT = _data(2, 1, 10, 3, vit=True)
CASES += [
    _case("do8-variance-in-target-center", D_VIT, variance_encoded_in_target=True),
    _case("do8-variance-in-target-corner", D_VIT, variance_encoded_in_target=True, code_type=CORNER, top_k=4),
]
D_PIX = _data(3, 2, 11, 3, normalized=False, end=8)
CASES += [
    _case("do8-unnormalized-ended", D_PIX, normalized=False, input_width=300, input_height=200, keep_top_k=[6]),
    _case("do8-unnormalized-corner-mxnet", D_PIX, normalized=False, input_width=300, input_height=200,
          code_type=CORNER, decrease_label_id=True),
]
D_IMG = _data(4, 3, 9, 3, per_image=True)
CASES += [
    _case("do8-priors-per-image", D_IMG, top_k=5, keep_top_k=[6]),
    _case("do8-priors-per-image-clip", D_IMG, clip_before_nms=True, clip_after_nms=True, code_type=CORNER),
]
D_ARM = _data(5, 2, 10, 3, arm=True)
CASES += [
    _case("do8-arm", D_ARM, objectness_score=0.4, keep_top_k=[8]),
    _case("do1-arm-corner", D_ARM, version=1, objectness_score=0.6, code_type=CORNER, top_k=5),
    _case("do8-arm-mxnet", D_ARM, objectness_score=0.5, decrease_label_id=True),
    _case("do8-arm-background-none", D_ARM, objectness_score=0.5, background_label_id=-1, keep_top_k=[9]),
    _case("do8-arm-unnormalized", _data(6, 2, 10, 3, arm=True, normalized=False, end=7), normalized=False,
          input_width=300, input_height=200, objectness_score=0.3),
    _case("do8-arm-per-class-loc", _data(7, 2, 8, 3, arm=True, share=False), share_location=False,
          objectness_score=0.3, keep_top_k=[5]),
]
D_BIG = _data(8, 2, 60, 6, ties=False)
CASES += [
    _case("do8-random-big", D_BIG, top_k=30, keep_top_k=[25], nms_threshold=0.3),
    _case("do8-random-big-corner-clip", D_BIG, top_k=20, keep_top_k=[50], code_type=CORNER, clip_before_nms=True),
    _case("do8-random-big-all", D_BIG, nms_threshold=0.6, confidence_threshold=0.2),
]


@pytest.mark.parametrize("case", params(CASES))
def test_detection_output(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)


def test_keep_top_k_zero(tmp_path: Path) -> None:
    """keep_top_k=0 drops every detection. The output has N * C * P rows, but OpenVINO's CPU plugin clears only
    N * top_k * C of them and leaves the rest uninitialised, so the reference is the specification's answer: the
    -1 marker row, then zeros."""
    case = _case("do8-keep-top-k-0", D, top_k=4, keep_top_k=[0])
    rows = np.zeros((1, 1, 2 * 12 * 4, 7), F)
    rows[0, 0, 0, 0] = -1
    run_against_numpy(case, tmp_path, lambda *_: [rows])


def test_corner_size_refused(tmp_path: Path) -> None:
    """OpenVINO rejects code_type CORNER_SIZE (its DetectionOutput accepts CORNER and CENTER_SIZE only)."""
    from tests.translate.ops.handmade import Input, write_layer_ir

    xml = write_layer_ir(tmp_path, "DetectionOutput", "opset8", {
        "background_label_id": "0", "top_k": "-1", "keep_top_k": "-1", "code_type": "caffe.PriorBoxParameter.CORNER_SIZE",
        "nms_threshold": "0.5", "normalized": "true"},
        [Input((1, 16), F), Input((1, 8), F), Input((1, 2, 16), F)], [((1, 1, 8, 7), F)])
    with pytest.raises(LayerConversionError, match="CORNER_SIZE"):
        ir2onnx.convert(xml)
