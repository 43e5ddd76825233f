"""ExperimentalDetectron*-6 (experimental_detectron.py) against OpenVINO. These ops have no Python function in
OpenVINO's API: the cases build them with its node factory."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import pytest
from openvino.utils.node_factory import NodeFactory

from tests.translate.ops.cases import Case, params, run_case

F, I32, I64 = np.float32, np.int32, np.int64
RNG = np.random.default_rng(8)


def _op(name: str, *inputs, **attrs):
    return NodeFactory("opset6").create(name, list(inputs), attrs)


def _openvino_defined_rows(build, values: list, rows: int) -> list[np.ndarray]:
    """OpenVINO's output with the rows after the first `rows` set to 0: a grid smaller than the feature map leaves
    them unwritten (undefined in the op's specification)."""
    ps = [ov.opset1.parameter(list(v.shape), v.dtype) for v in values]
    compiled = ov.Core().compile_model(ov.Model(build(*ps).outputs(), ps), "CPU",
                                       {"INFERENCE_PRECISION_HINT": "f32"})
    out = np.array(compiled(values)[compiled.outputs[0]])
    flat = out.reshape(-1, 4)
    flat[rows:] = 0
    return [flat.reshape(out.shape)]


def _grid(name: str, priors: int, fmap: tuple, image: tuple, dynamic: bool = False, **attrs) -> Case:
    data = [(RNG.standard_normal((priors, 4)) * 8).astype(F), RNG.standard_normal(fmap).astype(F),
            RNG.standard_normal(image).astype(F)]
    shapes = [(tuple(-1 for _ in d.shape) if dynamic else d.shape, F) for d in data]
    full = {"flatten": True, "h": 0, "w": 0, "stride_x": 0.0, "stride_y": 0.0}
    full.update(attrs)
    def build(p, f, i):
        return _op("ExperimentalDetectronPriorGridGenerator", p, f, i, **full)

    expected = None
    if full["h"] or full["w"]:
        rows = (full["h"] or fmap[2]) * (full["w"] or fmap[3]) * priors
        expected = lambda *vals: _openvino_defined_rows(build, list(vals), rows)
    return Case(name, build, shapes, values=data, expected=expected)


GRID_CASES = [
    _grid("grid-default", 3, (1, 2, 4, 5), (1, 3, 32, 40)),
    _grid("grid-not-flat", 3, (1, 2, 4, 5), (1, 3, 32, 40), flatten=False),
    _grid("grid-odd-steps", 2, (1, 1, 3, 7), (1, 3, 31, 50)),
    _grid("grid-strides", 4, (1, 1, 3, 3), (1, 3, 30, 30), stride_x=7.5, stride_y=3.25),
    _grid("grid-hw-attrs", 2, (1, 1, 5, 3), (1, 3, 30, 33), h=4, w=2),
    _grid("grid-h-attr", 3, (1, 1, 5, 4), (1, 3, 30, 33), h=2),
    _grid("grid-hw-attrs-not-flat", 2, (1, 1, 5, 7), (1, 3, 30, 33), h=4, w=6, stride_y=2.0, flatten=False),
    _grid("grid-dynamic", 3, (1, 2, 6, 4), (1, 3, 45, 29), dynamic=True),
]


@pytest.mark.parametrize("case", params(GRID_CASES))
def test_prior_grid_generator(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path)


# McIlroy's adversary against libstdc++'s introsort (descending), with some values repeated: std::sort hits its depth
# limit and heap-sorts a segment holding equal probabilities, whose order then differs from both a stable sort and
# an introsort without the limit
INTROSORT_KILLER = np.array([10, 47, 12, 45, -1, 43, 9, 41, 5, 39, 11, 37, 16, 35, 13, 33, 7, 29, 28, 29, 2, 4, 11, 8,
                             48, 46, 44, 42, 40, 38, 36, 34, 32, 30, 14, 17, 16, -1, 18, 21, 20, 23, 22, 25, 24, 8, 7,
                             15], F) / 64


def _topk(name: str, n: int, max_rois: int, levels: int = 0, dynamic: bool = False,
          probs: np.ndarray | None = None) -> Case:
    if probs is None:
        probs = RNG.random(n).astype(F)
    if levels:
        probs = (np.floor(probs * levels) / levels).astype(F)
    data = [(RNG.random((n, 4)) * 50).astype(F), probs]
    shapes = [((-1, 4) if dynamic else (n, 4), F), ((-1,) if dynamic else (n,), F)]

    def build(r, p):
        return _op("ExperimentalDetectronTopKROIs", r, p, max_rois=max_rois)

    expected = (lambda *vals: _openvino_defined_rows(build, list(vals), n)) if n < max_rois else None
    return Case(name, build, shapes, values=data, expected=expected)


TOPK_CASES = [
    _topk("topk-basic", 50, 10),
    _topk("topk-all", 20, 20),
    _topk("topk-fewer-rois", 7, 12),
    _topk("topk-dynamic", 40, 15, dynamic=True),
    _topk("topk-ties-short", 16, 10, levels=3),
    _topk("topk-ties-17", 17, 17, levels=2),
    _topk("topk-ties", 100, 60, levels=5),
    _topk("topk-ties-many", 300, 200, levels=7),
    _topk("topk-ties-two-values", 257, 257, levels=2),
    _topk("topk-all-equal", 64, 30, levels=1),
    _topk("topk-introsort-depth-limit", 48, 48, probs=INTROSORT_KILLER),
    _topk("topk-introsort-depth-limit-top", 48, 20, probs=INTROSORT_KILLER),
]


@pytest.mark.parametrize("case", params(TOPK_CASES))
def test_top_k_rois(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path)


def _extractor(name: str, rois: np.ndarray, channels: int, sizes: list[tuple[int, int]], scales: list[int],
               output_size: int = 3, sampling_ratio: int = 2, aligned: bool = False, dynamic: bool = False,
               two_outputs: bool = True) -> Case:
    maps = [RNG.standard_normal((1, channels, h, w)).astype(F) for h, w in sizes]
    data = [rois.astype(F), *maps]
    shapes = [((-1, 4) if dynamic else rois.shape, F)] + [((1, channels, -1, -1) if dynamic else m.shape, F)
                                                         for m in maps]
    attrs = {"output_size": output_size, "sampling_ratio": sampling_ratio, "pyramid_scales": scales,
             "aligned": aligned}

    def build(r, *fs):
        node = _op("ExperimentalDetectronROIFeatureExtractor", r, *fs, **attrs)
        return node.outputs() if two_outputs else [node.output(0)]

    return Case(name, build, shapes, values=data)


def _rois(n: int, extent: float, small: float = 4.0, big: float = 400.0) -> np.ndarray:
    xy = RNG.random((n, 2)) * extent
    wh = np.exp(RNG.uniform(np.log(small), np.log(big), (n, 2)))
    return np.concatenate([xy, xy + wh], 1)


# rois on the level boundaries: sqrt(area) / 224 = 2^(k - 2) exactly, and degenerate or flipped boxes
EDGE_ROIS = np.array([[0, 0, 112, 112], [0, 0, 224, 224], [0, 0, 448, 448], [10, 10, 66, 66], [5, 5, 5, 40],
                      [30, 30, 10, 10], [40, 8, 20, 30], [0, 0, 0.5, 0.5], [1, 2, 3, 900]], F)
LEVELS4 = [(32, 40), (16, 20), (8, 10), (4, 5)]
EXTRACTOR_CASES = [
    _extractor("extractor-basic", _rois(20, 300), 3, LEVELS4, [4, 8, 16, 32]),
    _extractor("extractor-aligned", _rois(20, 300), 2, LEVELS4, [4, 8, 16, 32], aligned=True),
    _extractor("extractor-adaptive-sampling", _rois(15, 200), 2, LEVELS4, [4, 8, 16, 32], sampling_ratio=0,
               output_size=2),
    _extractor("extractor-one-output", _rois(10, 200), 2, LEVELS4, [4, 8, 16, 32], two_outputs=False),
    _extractor("extractor-two-levels", _rois(12, 100, big=900), 2, [(24, 24), (12, 12)], [4, 8], output_size=4),
    _extractor("extractor-edges", EDGE_ROIS, 2, LEVELS4, [4, 8, 16, 32], sampling_ratio=0),
    _extractor("extractor-edges-aligned", EDGE_ROIS, 2, LEVELS4, [4, 8, 16, 32], aligned=True),
    _extractor("extractor-dynamic", _rois(9, 200), 2, LEVELS4, [4, 8, 16, 32], dynamic=True),
    _extractor("extractor-outside", _rois(10, 600, small=1.0), 2, LEVELS4, [4, 8, 16, 32], sampling_ratio=3),
]


@pytest.mark.parametrize("case", params(EXTRACTOR_CASES))
def test_roi_feature_extractor(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path)


def _single(name: str, a: int, h: int, w: int, info: list[float], min_size: float, nms: float, pre: int, post: int,
            spread: float = 0.3, levels: int = 0, dynamic: bool = False) -> Case:
    xy = RNG.random((h * w * a, 2)).astype(F) * np.array([info[1], info[0]], F)
    anchors = np.concatenate([xy, xy + (RNG.random((h * w * a, 2)) * 20 + 1).astype(F)], 1).astype(F)
    scores = RNG.random((a, h, w)).astype(F)
    if levels:
        scores = (np.floor(scores * levels) / levels).astype(F)
    data = [np.array(info, F), anchors, (RNG.standard_normal((4 * a, h, w)) * spread).astype(F), scores]
    shapes = [(tuple(-1 for _ in d.shape) if dynamic else d.shape, F) for d in data]
    attrs = {"min_size": min_size, "nms_threshold": nms, "pre_nms_count": pre, "post_nms_count": post}

    def build(i, an, d, s):
        return _op("ExperimentalDetectronGenerateProposalsSingleImage", i, an, d, s, **attrs).outputs()

    return Case(name, build, shapes, values=data)


SINGLE_CASES = [
    _single("single-basic", 3, 4, 5, [60, 80, 1], 2.0, 0.7, 50, 20),
    _single("single-padding", 2, 3, 3, [40, 40, 1], 1.0, 0.3, 18, 30),
    _single("single-min-size", 3, 4, 4, [64, 64, 1], 12.0, 0.5, 48, 40, spread=1.0),
    _single("single-big-deltas", 2, 4, 4, [64, 64, 1], 1.0, 0.6, 32, 20, spread=6.0),
    _single("single-ties", 3, 4, 4, [64, 64, 1], 2.0, 0.6, 30, 25, levels=3),
    _single("single-ties-zeros", 3, 4, 5, [48, 60, 1], 15.0, 0.8, 60, 60, spread=1.0, levels=4),
    _single("single-dynamic", 3, 5, 3, [64, 50, 1], 2.0, 0.7, 25, 10, dynamic=True),
    _single("single-nms-loose", 3, 4, 4, [64, 64, 1], 1.0, 0.05, 48, 48),
]


@pytest.mark.parametrize("case", params(SINGLE_CASES))
def test_generate_proposals_single_image(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path)


def _detection(name: str, rois: int, classes: int, score_threshold: float = 0.05, nms: float = 0.5, post: int = 10,
               max_det: int = 20, weights: tuple = (10.0, 10.0, 5.0, 5.0), levels: int = 0, spread: float = 1.0,
               flip: int = 0, dynamic: bool = False, same_across_classes: bool = False) -> Case:
    xy = RNG.random((rois, 2)) * 60
    boxes = np.concatenate([xy, xy + RNG.random((rois, 2)) * 30 + 2], 1).astype(F)
    if flip:  # some ROIs with a side <= 0
        boxes[:flip, 2] = boxes[:flip, 0] - 1
    scores = RNG.random((rois, classes)).astype(F)
    if levels:
        scores = (np.floor(scores * levels) / levels).astype(F)
    if same_across_classes:  # equal (score, ROI) pairs in several classes
        scores[:] = scores[:, :1]
    data = [boxes, (RNG.standard_normal((rois, 4 * classes)) * spread).astype(F), scores,
            np.array([[80, 90, 1]], F)]
    shapes = [(tuple(-1 for _ in d.shape) if dynamic and i < 3 else d.shape, F) for i, d in enumerate(data)]
    attrs = {"score_threshold": score_threshold, "nms_threshold": nms, "max_delta_log_wh": float(np.log(1000 / 16)),
             "num_classes": classes, "post_nms_count": post, "max_detections_per_image": max_det,
             "class_agnostic_box_regression": False, "deltas_weights": list(weights)}

    def build(r, d, s, i):
        return _op("ExperimentalDetectronDetectionOutput", r, d, s, i, **attrs).outputs()

    return Case(name, build, shapes, values=data)


DETECTION_CASES = [
    _detection("detection-basic", 30, 4),
    _detection("detection-fewer-than-max", 8, 3, max_det=50),
    _detection("detection-cut-to-max", 40, 5, max_det=7, post=20),
    _detection("detection-flipped-rois", 20, 3, flip=5, score_threshold=-1.0, max_det=40),
    _detection("detection-nms-tight", 30, 3, nms=0.1, max_det=40),
    _detection("detection-nms-none", 15, 3, nms=1.0, post=100, max_det=100),
    _detection("detection-big-deltas", 20, 3, spread=5.0, weights=(1.0, 1.0, 1.0, 1.0)),
    _detection("detection-ties-within-class", 30, 4, levels=4, max_det=60, post=30),
    _detection("detection-ties-cut", 40, 4, levels=3, max_det=9, post=40, nms=0.7),
    _detection("detection-ties-across-classes", 30, 5, max_det=13, post=30, same_across_classes=True),
    _detection("detection-ties-everywhere", 40, 5, max_det=21, post=40, levels=2, nms=0.9,
               same_across_classes=True),
    _detection("detection-dynamic", 25, 4, dynamic=True),
]


@pytest.mark.parametrize("case", params(DETECTION_CASES))
def test_detection_output(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path)


def _as_f16(case: Case) -> Case:
    """The case with f16 inputs (and so f16 outputs); the plugin computes in f32 and converts."""
    values = [v.astype(np.float16) for v in case.values]
    shapes = [(shape, np.float16) for shape, _ in case.inputs]
    return Case(f"{case.name}-f16", case.build, shapes, values=values)


F16_CASES = [_as_f16(c) for c in (GRID_CASES[0], TOPK_CASES[0], EXTRACTOR_CASES[0], SINGLE_CASES[0],
                                  DETECTION_CASES[0])]


@pytest.mark.parametrize("case", params(F16_CASES))
def test_f16(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path)
