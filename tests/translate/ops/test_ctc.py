"""Greedy CTC decoders (ctc.py) against OpenVINO: merging on and off, blanks between repeats, argmax ties, masks
with non-binary values, lengths 0 and T, run-time and out-of-range blank indices, output types, f16 scores."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino.opset1 as ops1
import openvino.opset6 as ops6
import pytest

from tests.translate.ops.cases import Case, const, params, run_case

F, F16, I32, I64 = np.float32, np.float16, np.int32, np.int64
RNG = np.random.default_rng(5)
T, N, C = 7, 3, 4


def _scores(t: int, n: int, c: int, dtype: type = F) -> np.ndarray:
    """[N, T, C] scores rounded to one decimal (many argmax ties), with repeats and blanks between repeats."""
    x = np.round(RNG.random((n, t, c)), 1)
    labels = RNG.integers(0, c, (n, t))
    labels[0, :4] = [1, 1, c - 1, 1]
    x[np.arange(n)[:, None], np.arange(t)[None], labels] += 1.0
    x[1, 0] = [0.5] * c  # a full tie: the first index wins
    return x.astype(dtype)


SCORES = _scores(T, N, C)
MASK = np.ones((T, N), F)
MASK[5:, 1] = 0
MASK[2, 2], MASK[4, 2] = 0, 1  # ends at its first zero
MASK[1, 0], MASK[3, 0] = 0.5, -2.0  # any non-zero value continues

CASES = []
for merge in (True, False):
    CASES += [
        Case(f"greedy-1-merge{merge}", lambda x, m, mg=merge: ops1.ctc_greedy_decoder(x, m, mg),
             [((T, N, C), F), ((T, N), F)], values=[SCORES.transpose(1, 0, 2).copy(), MASK]),
        Case(f"greedy-1-f16-merge{merge}", lambda x, m, mg=merge: ops1.ctc_greedy_decoder(x, m, mg),
             [((T, N, C), F16), ((T, N), F16)], values=[SCORES.transpose(1, 0, 2).astype(F16), MASK.astype(F16)]),
        Case(f"greedy-1-all-masked-merge{merge}", lambda x, m, mg=merge: ops1.ctc_greedy_decoder(x, m, mg),
             [((T, N, C), F), ((T, N), F)], values=[SCORES.transpose(1, 0, 2).copy(), np.zeros((T, N), F)]),
    ]
    for lengths in ([7, 3, 0], [1, 7, 5]):
        name = "-".join(map(str, lengths))
        CASES.append(Case(f"greedy-seqlen-default-blank-{name}-merge{merge}",
                          lambda x, s, mg=merge: ops6.ctc_greedy_decoder_seq_len(x, s, None, mg),
                          [((N, T, C), F), ((N,), I32)], values=[SCORES, np.array(lengths, I32)]))
    for blank in (0, 1, C - 1, -1, C + 5):
        CASES.append(Case(f"greedy-seqlen-const-blank{blank}-merge{merge}",
                          lambda x, s, mg=merge, bl=blank: ops6.ctc_greedy_decoder_seq_len(x, s, const(bl, I32), mg),
                          [((N, T, C), F), ((N,), I32)], values=[SCORES, np.array([7, 6, 4], I32)]))
    CASES.append(Case(f"greedy-seqlen-runtime-blank-merge{merge}",
                      lambda x, s, bl, mg=merge: ops6.ctc_greedy_decoder_seq_len(x, s, bl, mg, "i64", "i64"),
                      [((N, T, C), F), ((N,), I64), ((1,), I64)],
                      values=[SCORES, np.array([7, 2, 5], I64), np.array([2], I64)]))
CASES += [
    Case("greedy-seqlen-types-i64-i32", lambda x, s: ops6.ctc_greedy_decoder_seq_len(x, s, None, True, "i64", "i32"),
         [((N, T, C), F), ((N,), I32)], values=[SCORES, np.array([7, 6, 4], I32)]),
    Case("greedy-seqlen-types-i32-i64", lambda x, s: ops6.ctc_greedy_decoder_seq_len(x, s, None, False, "i32", "i64"),
         [((N, T, C), F), ((N,), I64)], values=[SCORES, np.array([3, 6, 7], I64)]),
    Case("greedy-seqlen-f16", lambda x, s: ops6.ctc_greedy_decoder_seq_len(x, s, const(0, I64)),
         [((N, T, C), F16), ((N,), I32)], values=[SCORES.astype(F16), np.array([7, 6, 4], I32)]),
    Case("greedy-seqlen-random-long", lambda x, s: ops6.ctc_greedy_decoder_seq_len(x, s),
         [((4, 40, 6), F), ((4,), I32)], values=[_scores(40, 4, 6), np.array([40, 17, 1, 33], I32)]),
]


@pytest.mark.parametrize("case", params(CASES))
def test_ctc_greedy(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)
