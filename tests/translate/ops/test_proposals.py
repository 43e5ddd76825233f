"""Proposal-1/4 (proposals.py) against OpenVINO: both frameworks, every attribute, img_info of 3 and 4 values,
boxes filtered by min_size, clipping, normalization, batches, fewer boxes than post_nms_topn (padding and the -1
marker), run-time input shapes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset1 as ops1
import openvino.opset4 as ops4
import openvino.opset9 as ops9
import pytest

import ir2onnx
from ir2onnx.errors import LayerConversionError
from ir2onnx.verify.onnxruntime_run import run_onnxruntime
from tests.translate.ops.cases import Case, params, run_case
from tests.utils import save_ir

F = np.float32
RNG = np.random.default_rng(5)


def _attrs(**kw) -> dict:
    base = {"base_size": 16, "pre_nms_topn": 60, "post_nms_topn": 20, "nms_thresh": 0.6, "feat_stride": 16,
            "min_size": 4, "ratio": [0.5, 1.0, 2.0], "scale": [1.0, 2.0]}
    base.update(kw)
    for key in ("base_size", "pre_nms_topn", "post_nms_topn", "feat_stride", "min_size"):
        base[key] = np.uint32(base[key])
    for key in ("nms_thresh", "box_size_scale", "box_coordinate_scale"):
        if key in base:
            base[key] = F(base[key])
    base["ratio"], base["scale"] = np.array(base["ratio"], F), np.array(base["scale"], F)
    return base


def _data(n: int, a: int, h: int, w: int, info: list[float], spread: float = 0.3, levels: int = 0) -> list:
    scores = RNG.random((n, 2 * a, h, w)).astype(F)
    if levels:  # few distinct scores: many ties
        scores = (np.floor(scores * levels) / levels).astype(F)
    deltas = (RNG.standard_normal((n, 4 * a, h, w)) * spread).astype(F)
    return [scores, deltas, np.array(info, F)]


def _openvino_padded_zero(attrs: dict, values: list) -> list[np.ndarray]:
    """OpenVINO's Proposal-4 outputs, the scores after each image's kept rows set to 0: the CPU plugin writes the
    padding rows of the boxes but leaves those of the scores unwritten (whatever the memory held)."""
    ps = [ops1.parameter(list(v.shape), v.dtype) for v in values]
    model = ov.Model(ops4.proposal(*ps, attrs).outputs(), ps)
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    res = compiled(values)
    rois, probs = (np.array(res[o]) for o in compiled.outputs)
    post = int(attrs["post_nms_topn"])
    for n in range(rois.shape[0] // post):
        marks = np.nonzero(rois[n * post:(n + 1) * post, 0] == -1)[0]
        if marks.size:
            probs[n * post + marks[0]:(n + 1) * post] = 0
    return [rois, probs]


def _case(name: str, version: int, attrs: dict, data: list, dynamic: bool = False, dtype: type = F) -> Case:
    mod = ops4 if version == 4 else ops1
    data = [d.astype(dtype) for d in data]
    shapes = [((-1, d.shape[1], -1, -1) if dynamic and d.ndim == 4 else d.shape, dtype) for d in data]
    expected = (lambda *vals: _openvino_padded_zero(attrs, list(vals))) if version == 4 else None
    return Case(name, lambda s, d, i: mod.proposal(s, d, i, attrs), shapes, values=data, expected=expected)


def _a(attrs: dict) -> int:
    return len(attrs["ratio"]) * len(attrs["scale"])


CASES: list[Case] = []
for v in (1, 4):
    for fw in ("", "tensorflow"):
        at = _attrs(framework=fw)
        CASES += [
            _case(f"v{v}-{fw or 'caffe'}-basic", v, at, _data(1, _a(at), 5, 6, [80, 96, 1])),
            _case(f"v{v}-{fw or 'caffe'}-batch-info4", v, at, _data(2, _a(at), 4, 7, [64, 112, 1.5, 0.5])),
            _case(f"v{v}-{fw or 'caffe'}-dynamic", v, at, _data(2, _a(at), 6, 5, [96, 80, 1]), dynamic=True),
        ]
    CASES += [
        _case(f"v{v}-few-boxes-padding", v, _attrs(pre_nms_topn=8, post_nms_topn=30),
              _data(1, 6, 3, 3, [48, 48, 1])),
        _case(f"v{v}-min-size-filters", v, _attrs(min_size=40, post_nms_topn=40),
              _data(1, 6, 5, 5, [80, 80, 1], spread=1.0)),
        _case(f"v{v}-clip-after-normalize", v, _attrs(clip_before_nms=False, clip_after_nms=True, normalize=True),
              _data(2, 6, 5, 4, [70, 60, 1.0, 2.0], spread=0.8)),
        _case(f"v{v}-no-clip", v, _attrs(clip_before_nms=False, framework="tensorflow"),
              _data(1, 6, 5, 4, [70, 60, 1.0], spread=0.8)),
        _case(f"v{v}-scales", v, _attrs(box_size_scale=2.0, box_coordinate_scale=5.0, ratio=[0.7, 1.3],
                                        scale=[0.5, 1.5, 3.0], base_size=10, feat_stride=8, nms_thresh=0.3),
              _data(1, 6, 6, 6, [48, 48, 1])),
        _case(f"v{v}-nms-strict", v, _attrs(nms_thresh=1e-6, post_nms_topn=50), _data(1, 6, 4, 4, [64, 64, 1])),
        _case(f"v{v}-nms-none", v, _attrs(nms_thresh=1.0, pre_nms_topn=30, post_nms_topn=25),
              _data(1, 6, 4, 4, [64, 64, 1])),
        # equal scores: std::partial_sort's heap order decides which boxes come first
        _case(f"v{v}-ties-few-levels", v, _attrs(pre_nms_topn=40, post_nms_topn=30),
              _data(2, 6, 4, 5, [64, 80, 1], levels=4)),
        _case(f"v{v}-ties-all-sorted", v, _attrs(pre_nms_topn=500, post_nms_topn=60, nms_thresh=0.9),
              _data(1, 6, 3, 4, [48, 64, 1], levels=3)),
        # (OpenVINO's CPU plugin crashes for pre_nms_topn below 8 with post_nms_topn above 1)
        _case(f"v{v}-ties-pre8", v, _attrs(pre_nms_topn=8, post_nms_topn=3), _data(1, 6, 3, 3, [48, 48, 1], levels=2)),
        _case(f"v{v}-ties-post1", v, _attrs(pre_nms_topn=3, post_nms_topn=1), _data(1, 6, 3, 3, [48, 48, 1], levels=2)),
        _case(f"v{v}-ties-tensorflow", v, _attrs(framework="tensorflow", pre_nms_topn=33, min_size=30),
              _data(2, 6, 4, 4, [64, 64, 1], spread=0.6, levels=5)),
        _case(f"v{v}-f16", v, _attrs(), _data(1, 6, 4, 4, [64, 64, 1]), dtype=np.float16),
        _case(f"v{v}-big-pre", v, _attrs(pre_nms_topn=6000, post_nms_topn=100), _data(1, 6, 8, 9, [128, 144, 1])),
    ]


@pytest.mark.parametrize("case", params(CASES))
def test_proposal(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path)


@pytest.mark.parametrize("version", ["extension", "experimental"])
def test_proposal_of_an_extension_version_is_proposal_4(version: str, tmp_path: Path) -> None:
    """Old IRs mark Proposal `version="extension"` or "experimental"; OpenVINO's reader reads it as opset6's
    Proposal-4 (two outputs), and so does ir2onnx: the same ONNX outputs as the opset4 layer's."""
    data = _data(1, 6, 4, 4, [64, 64, 1])
    ps = [ops1.parameter(list(v.shape), v.dtype) for v in data]
    xml = save_ir(ov.Model(ops4.proposal(*ps, _attrs()).outputs(), ps), tmp_path)
    text = xml.read_text()
    renamed = tmp_path / "renamed.xml"
    renamed.write_text(text.replace('type="Proposal" version="opset4"', f'type="Proposal" version="{version}"'))
    (tmp_path / "renamed.bin").write_bytes(xml.with_suffix(".bin").read_bytes())
    assert renamed.read_text() != text
    assert len(ov.Core().read_model(str(renamed)).outputs) == 2
    protos = [ir2onnx.convert(x) for x in (xml, renamed)]
    ours = [run_onnxruntime(p, dict(zip([i.name for i in p.graph.input], data))) for p in protos]
    assert len(ours[1]) == 2
    for got, want in zip(*ours):
        np.testing.assert_array_equal(got, want)


# GenerateProposals-9: im_info [N, 3|4], anchors [H, W, A, 4], deltas [N, 4A, H, W], scores [N, A, H, W]
def _gp_data(n: int, a: int, h: int, w: int, info: list[list[float]], spread: float = 0.3, levels: int = 0,
             anchor_size: float = 20.0) -> list:
    xy = RNG.random((h, w, a, 2)).astype(F) * np.array([info[0][1], info[0][0]], F)
    wh = (RNG.random((h, w, a, 2)) * anchor_size + 1).astype(F)
    anchors = np.concatenate([xy, xy + wh], -1).astype(F)
    deltas = (RNG.standard_normal((n, 4 * a, h, w)) * spread).astype(F)
    scores = RNG.random((n, a, h, w)).astype(F)
    if levels:
        scores = (np.floor(scores * levels) / levels).astype(F)
    return [np.array(info, F), anchors, deltas, scores]


def _gp_case(name: str, data: list, min_size: float, nms: float, pre: int, post: int, normalized: bool = True,
             roi_num_type: str = "i64", dynamic: bool = False, dtype: type = F) -> Case:
    data = [d.astype(dtype) for d in data]
    shapes = [(tuple(-1 for _ in d.shape) if dynamic else d.shape, dtype) for d in data]
    return Case(name, lambda i, an, d, s: ops9.generate_proposals(i, an, d, s, min_size, nms, pre, post, normalized,
                                                                 roi_num_type=roi_num_type), shapes, values=data)


GP_CASES = [
    _gp_case("gp-basic", _gp_data(1, 3, 4, 5, [[60, 80, 1]]), 2.0, 0.7, 50, 20),
    _gp_case("gp-batch-info4-i32", _gp_data(2, 3, 4, 4, [[60, 70, 1, 2], [50, 40, 2, 0.5]]), 3.0, 0.5, 40, 15,
             roi_num_type="i32"),
    _gp_case("gp-not-normalized", _gp_data(2, 2, 5, 4, [[64, 64, 1], [40, 50, 1]], spread=0.6), 4.0, 0.6, 30, 30,
             normalized=False),
    _gp_case("gp-min-size-drops-most", _gp_data(2, 3, 4, 4, [[64, 64, 1], [64, 64, 1]], spread=1.0), 25.0, 0.5,
             40, 40),
    _gp_case("gp-all-dropped", _gp_data(1, 2, 3, 3, [[32, 32, 1]]), 1000.0, 0.5, 10, 5),
    _gp_case("gp-big-deltas-capped", _gp_data(1, 2, 4, 4, [[64, 64, 1]], spread=6.0), 1.0, 0.7, 32, 20),
    _gp_case("gp-ties", _gp_data(2, 3, 4, 4, [[64, 64, 1], [60, 70, 1]], levels=3), 2.0, 0.6, 30, 25),
    _gp_case("gp-ties-not-normalized", _gp_data(1, 4, 3, 5, [[48, 80, 1]], levels=2), 2.0, 0.4, 60, 60,
             normalized=False),
    _gp_case("gp-dynamic", _gp_data(2, 3, 5, 3, [[64, 64, 1], [50, 60, 1]]), 2.0, 0.7, 25, 10, dynamic=True),
    _gp_case("gp-nms-loose", _gp_data(1, 3, 4, 4, [[64, 64, 1]]), 1.0, 0.05, 48, 48),
    _gp_case("gp-f16", _gp_data(2, 3, 4, 4, [[64, 64, 1], [60, 50, 1]]), 2.0, 0.6, 30, 20, dtype=np.float16),
]


@pytest.mark.parametrize("case", params(GP_CASES))
def test_generate_proposals(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path)


def test_proposal_unknown_framework(tmp_path: Path) -> None:
    data = _data(1, 6, 3, 3, [48, 48, 1])
    ps = [ops1.parameter(list(d.shape), F) for d in data]
    model = ov.Model(ops4.proposal(*ps, _attrs(framework="mxnet")).outputs(), ps)
    with pytest.raises(LayerConversionError, match="framework 'mxnet'"):
        ir2onnx.convert(save_ir(model, tmp_path))
