"""Embedding bags (embedding.py) against OpenVINO: empty bags, default_index, per-sample weights, sum and mean."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino.opset3 as ops3
import openvino.opset15 as ops15
import pytest

from tests.translate.ops.cases import Case, const, params, run_case

F, F16, I32, I64 = np.float32, np.float16, np.int32, np.int64
RNG = np.random.default_rng(17)
IDX = np.array([0, 2, 3, 1, 1, 4, 0], I32)
OFF = np.array([0, 2, 2, 4, 4, 6], I32)  # bags 1 and 4 empty
SEG = np.array([0, 0, 2, 2, 3, 3, 5], I32)  # sorted (as the specification requires); segments 1 and 4 empty
W = RNG.standard_normal(7).astype(F)
TABLE = ((5, 3), F)
TABLE3 = ((5, 2, 2), F)


def c(v: np.ndarray):  # type: ignore[no-untyped-def]
    return const(v, v.dtype)


CASES = [
    Case("offsets-sum", lambda t: ops3.embedding_bag_offsets_sum(t, c(IDX), c(OFF)), [TABLE]),
    Case("offsets-sum-default", lambda t: ops3.embedding_bag_offsets_sum(t, c(IDX), c(OFF), const(3, I32)), [TABLE]),
    Case("offsets-sum-default-negative", lambda t: ops3.embedding_bag_offsets_sum(t, c(IDX), c(OFF), const(-1, I32)),
         [TABLE]),
    Case("offsets-sum-weights", lambda t: ops3.embedding_bag_offsets_sum(t, c(IDX), c(OFF), const(1, I32), c(W)),
         [TABLE3]),
    Case("offsets-sum-runtime", lambda t, i, o, d, w: ops3.embedding_bag_offsets_sum(t, i, o, d, w),
         [TABLE, ((7,), I64), ((6,), I64), ((), I64), ((7,), F)],
         values=[RNG.standard_normal((5, 3)).astype(F), IDX.astype(I64), OFF.astype(I64), np.array(2, I64), W]),
    Case("offsets15-mean", lambda t: ops15.embedding_bag_offsets(t, c(IDX), c(OFF), const(1, I32), None, "mean"),
         [TABLE]),
    Case("offsets15-mean-3d", lambda t: ops15.embedding_bag_offsets(t, c(IDX), c(OFF), None, None, "mean"), [TABLE3]),
    Case("offsets15-sum-weights", lambda t: ops15.embedding_bag_offsets(t, c(IDX), c(OFF), None, c(W), "sum"),
         [TABLE]),
    Case("offsets-sum-f16", lambda t: ops3.embedding_bag_offsets_sum(t, c(IDX), c(OFF), const(0, I32)), [((5, 3), F16)],
         rtol=1e-3, atol=1e-3),
    Case("offsets-sum-i32-table", lambda t: ops3.embedding_bag_offsets_sum(t, c(IDX), c(OFF)), [((5, 3), I32)]),
    Case("segments-sum", lambda t: ops3.embedding_segments_sum(t, c(IDX), c(SEG), const(6, I32)), [TABLE]),
    Case("segments-sum-default-weights", lambda t: ops3.embedding_segments_sum(t, c(IDX), c(SEG), const(7, I32),
                                                                               const(4, I32), c(W)), [TABLE3]),
    Case("segments-sum-runtime", lambda t, s, n: ops3.embedding_segments_sum(t, c(IDX), s, n, const(2, I32)),
         [TABLE, ((7,), I32), ((), I32)],
         values=[RNG.standard_normal((5, 3)).astype(F), SEG, np.array(8, I32)]),
    Case("packed-sum", lambda t: ops3.embedding_bag_packed_sum(t, c(IDX[:6].reshape(3, 2))), [TABLE]),
    Case("packed-sum-weights", lambda t: ops3.embedding_bag_packed_sum(t, c(IDX[:6].reshape(2, 3)),
                                                                       c(W[:6].reshape(2, 3))), [TABLE3]),
    Case("packed15-mean", lambda t: ops15.embedding_bag_packed(t, c(IDX[:6].reshape(2, 3)), None, "mean"), [TABLE]),
    Case("packed15-sum-runtime", lambda t, i, w: ops15.embedding_bag_packed(t, i, w, "sum"),
         [TABLE, ((2, 3), I64), ((2, 3), F)],
         values=[RNG.standard_normal((5, 3)).astype(F), IDX[:6].reshape(2, 3).astype(I64), W[:6].reshape(2, 3)]),
]


@pytest.mark.parametrize("case", params(CASES))
def test_embedding(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)
