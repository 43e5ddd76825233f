"""Normalizations (normalization.py) and indexing ops (gather.py): TopK, OneHot, CumSum, DepthToSpace."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino.opset1 as ops1
import openvino.opset3 as ops3
import openvino.opset5 as ops5
import openvino.opset13 as ops
import openvino.opset16 as ops16
import pytest

from tests.translate.ops.cases import Case, const, params, run_case

F, I32, I64 = np.float32, np.int32, np.int64
RNG = np.random.default_rng(13)
POS = (np.abs(RNG.standard_normal(3)) + 0.5).astype(F)

CASES = [
    Case("batch-norm-5", lambda x: ops.batch_norm_inference(x, const(RNG.standard_normal(3)), const(RNG.standard_normal(3)),
                                                            const(RNG.standard_normal(3)), const(POS), 1e-3),
         [((2, 3, 4, 4), F)]),
    Case("batch-norm-1", lambda x: ops1.batch_norm_inference(x, const(RNG.standard_normal(3)), const(RNG.standard_normal(3)),
                                                             const(RNG.standard_normal(3)), const(POS), 1e-3),
         [((2, 3, 4), F)]),
    Case("mvn-inside", lambda x: ops.mvn(x, const([2, 3], I64), True, 1e-5, "inside_sqrt"), [((2, 3, 4, 5), F)],
         rtol=1e-4),
    Case("mvn-outside-no-variance", lambda x: ops.mvn(x, const([1], I64), False, 1e-5, "outside_sqrt"),
         [((2, 3, 4), F)]),
    Case("normalize-l2-add", lambda x: ops.normalize_l2(x, const([1], I64), 1e-6, "add"), [((2, 3, 4), F)]),
    Case("normalize-l2-max", lambda x: ops.normalize_l2(x, const([1, 2], I64), 1e-6, "max"), [((2, 3, 4), F)]),
    Case("topk-11-max-value", lambda x: ops.topk(x, const(3, I64), 1, "max", "value", "i32"), [((2, 6), F)]),
    Case("topk-11-min-index", lambda x: ops.topk(x, const(3, I64), -1, "min", "index", "i64"), [((2, 3, 6), F)]),
    Case("topk-3", lambda x: ops3.topk(x, const(2, I64), 0, "max", "value", "i64"), [((5, 3), F)]),
    *[Case(f"one-hot-16-{mode}", lambda i, mode=mode: ops16.one_hot(i, const(4, I64), const(1.0), const(0.0), -1,
                                                                    negative_indices_mode=mode), [((6,), I64)],
           values=[np.array([-5, -4, -1, 0, 3, 4], I64)]) for mode in ("ignore_negative", "normalize")],
    Case("one-hot", lambda i: ops.one_hot(i, const(4, I64), const(1.0), const(0.0), -1), [((5,), I64)],
         values=[np.array([0, 3, -1, 2, 5], I64)]),
    Case("one-hot-axis0-i32", lambda i: ops.one_hot(i, const(3, I32), const(5, I32), const(-1, I32), 0), [((2, 2), I32)],
         values=[np.array([[0, 2], [1, 1]], I32)]),
    Case("gather-elements", lambda x, i: ops.gather_elements(x, i, 1), [((2, 3), F), ((2, 2), I64)],
         values=[np.arange(6, dtype=F).reshape(2, 3), np.array([[2, 0], [1, 1]], I64)]),
    Case("gather-nd-8-batch", lambda x, i: ops.gather_nd(x, i, 1), [((2, 3, 4), F), ((2, 2, 1), I64)],
         values=[np.arange(24, dtype=F).reshape(2, 3, 4), np.array([[[2], [0]], [[1], [1]]], I64)]),
    Case("gather-nd-5", lambda x, i: ops5.gather_nd(x, i, 0), [((2, 3, 4), F), ((2, 2), I64)],
         values=[np.arange(24, dtype=F).reshape(2, 3, 4), np.array([[1, 2], [0, 0]], I64)]),
    Case("non-zero", lambda x: ops.non_zero(x, "i64"), [((2, 3), F)],
         values=[np.array([[0, 1.5, 0], [2, 0, 3]], F)]),
    Case("cumsum", lambda x: ops.cumsum(x, const(1, I64)), [((2, 5), F)]),
    Case("cumsum-exclusive-reverse", lambda x: ops.cumsum(x, const(0, I64), True, True), [((4, 3), F)]),
    Case("depth-to-space-blocks-first", lambda x: ops.depth_to_space(x, "blocks_first", 2), [((1, 8, 2, 3), F)]),
    Case("depth-to-space-depth-first", lambda x: ops.depth_to_space(x, "depth_first", 2), [((1, 8, 2, 3), F)]),
    Case("space-to-depth", lambda x: ops.space_to_depth(x, "blocks_first", 2), [((1, 2, 4, 6), F)]),
]


@pytest.mark.parametrize("case", params(CASES))
def test_normalization_and_indexing(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)
