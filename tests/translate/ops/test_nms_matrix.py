"""MatrixNms-8 (nms_matrix.py, nms_heap.py, nms_rows.py) against OpenVINO: both decay functions, thresholds, every
sort mode, keep_top_k / nms_top_k cuts, background class, unnormalized and invalid boxes, output types, and equal
scores (ordered as libstdc++'s std::partial_sort leaves them)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino.opset8 as ops8
import pytest

from tests.translate.ops.cases import Case, params, run_case
from tests.translate.ops.reference import run_against_numpy

F, F16, I32, I64 = np.float32, np.float16, np.int32, np.int64
RNG = np.random.default_rng(31)


def _data(b: int, c: int, m: int, scale: float, ties: bool, invalid: bool = False) -> list[np.ndarray]:
    xy = RNG.random((b, m, 2)).astype(F) * 0.6 * scale
    wh = (RNG.random((b, m, 2)).astype(F) - (0.2 if invalid else 0.0)) * 0.5 * scale
    scores = RNG.random((b, c, m)).astype(F)
    return [np.concatenate([xy, xy + wh], -1), np.round(scores, 1).astype(F) if ties else scores]


def case(name: str, attrs: dict, b: int = 2, c: int = 3, m: int = 12, scale: float = 1.0, ties: bool = False,
         invalid: bool = False, dtype: type = F, data: list[np.ndarray] | None = None) -> Case:
    data = data or _data(b, c, m, scale, ties, invalid)
    return Case(name, lambda bx, sc: ops8.matrix_nms(bx, sc, **attrs),
                [(data[0].shape, dtype), (data[1].shape, dtype)], values=[d.astype(dtype) for d in data])


CASES = [
    case("defaults", {}),
    case("linear-score-across", {"sort_result_type": "score", "sort_result_across_batch": True,
                                 "post_threshold": 0.2}),
    case("gaussian-classid-across-i32", {"decay_function": "gaussian", "gaussian_sigma": 0.5, "output_type": "i32",
                                         "sort_result_type": "classid", "sort_result_across_batch": True}),
    case("gaussian-classid-within", {"decay_function": "gaussian", "sort_result_type": "classid",
                                     "post_threshold": 0.3}),
    case("score-within", {"sort_result_type": "score", "score_threshold": 0.3, "post_threshold": 0.1}),
    case("none-across", {"sort_result_type": "none", "sort_result_across_batch": True, "post_threshold": 0.1}),
    case("keep-top-k", {"keep_top_k": 4, "sort_result_type": "score", "sort_result_across_batch": True}, b=3),
    case("nms-top-k", {"nms_top_k": 3, "post_threshold": 0.05, "decay_function": "gaussian"}),
    case("nms-top-k-above-boxes", {"nms_top_k": 100, "keep_top_k": 100}),
    case("background", {"background_class": 1, "sort_result_type": "classid", "sort_result_across_batch": True}),
    case("background-out-of-range", {"background_class": 9, "post_threshold": 0.2}),
    case("unnormalized", {"normalized": False, "post_threshold": 0.2, "sort_result_type": "score"}, scale=10),
    case("invalid-boxes", {"post_threshold": 0.1, "sort_result_type": "score"}, invalid=True),
    case("unnormalized-invalid-gaussian", {"normalized": False, "decay_function": "gaussian",
                                           "gaussian_sigma": 5.0}, scale=10, invalid=True),
    case("ties", {"post_threshold": 0.1, "sort_result_type": "score", "sort_result_across_batch": True}, ties=True,
         m=30),
    case("ties-nms-top-k", {"nms_top_k": 7, "decay_function": "gaussian", "keep_top_k": 10}, ties=True, m=40),
    case("ties-unnormalized", {"normalized": False, "nms_top_k": 5, "score_threshold": 0.3}, scale=10, ties=True,
         m=25),
    case("f16", {"post_threshold": 0.1, "sort_result_type": "score"}, dtype=F16),
]


@pytest.mark.parametrize("case", params(CASES))
def test_matrix_nms(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)


EMPTY = [
    case("nothing-above-score-threshold", {"score_threshold": 0.95}, data=[_data(2, 2, 5, 1.0, False)[0],
                                                                          np.full((2, 2, 5), 0.5, F)]),
    case("nothing-above-post-threshold-i32", {"post_threshold": 0.99, "output_type": "i32"}),
    case("keep-top-k-0", {"keep_top_k": 0}),
    case("only-background", {"background_class": 0}, c=1),
    case("nms-top-k-0", {"nms_top_k": 0}),
    case("no-boxes", {}, data=[np.zeros((2, 0, 4), F), np.zeros((2, 3, 0), F)]),
]


@pytest.mark.parametrize("case", params(EMPTY))
def test_matrix_nms_nothing_selected(tmp_path: Path, case: Case) -> None:
    """No box selected: OpenVINO's CPU plugin fails ("Total number of boxes is less or equal than 0") instead of
    returning empty rows (with nms_top_k=0 it writes past its buffers and crashes; with no boxes it leaves
    selected_num uninitialised), so numpy's answer is the reference."""
    batches = case.values[1].shape[0]
    idx = I32 if "i32" in case.name else I64

    def expected(*_: np.ndarray) -> list[np.ndarray]:
        return [np.zeros((0, 6), F), np.zeros((0, 1), idx), np.zeros(batches, idx)]

    run_against_numpy(case, tmp_path, expected)
