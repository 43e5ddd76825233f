"""CTCLoss-4 (ctc_loss.py) against OpenVINO: every attribute combination, default, constant and run-time blank
indices (first, middle, last class; labels holding the blank), different logit and label lengths per sequence,
repeated labels, alignments that cannot exist (infinite loss), logits whose exp overflows, long sequences, f16
logits and i64 lengths. Empty label sequences crash OpenVINO's CPU plugin (it writes outside its buffers); those
are checked against a numpy forward recursion."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset4 as ops4
import pytest

from tests.translate.ops.cases import Case, const, params, run_case
from tests.utils import check_model

F, F16, I32, I64 = np.float32, np.float16, np.int32, np.int64
RNG = np.random.default_rng(4)
N, T, C = 3, 8, 5

ATTRS = [
    ("default", {}),
    ("no-merge", {"ctc_merge_repeated": False}),
    ("collapse", {"preprocess_collapse_repeated": True}),
    ("collapse-no-merge", {"preprocess_collapse_repeated": True, "ctc_merge_repeated": False}),
    ("unique", {"unique": True}),
    ("unique-no-merge", {"unique": True, "ctc_merge_repeated": False}),
    ("unique-collapse", {"unique": True, "preprocess_collapse_repeated": True}),
    ("all", {"unique": True, "preprocess_collapse_repeated": True, "ctc_merge_repeated": False}),
]


def _labels(n: int, t: int, c: int, blank: int) -> np.ndarray:
    """Labels avoiding the blank, with runs of repeats and recurring labels."""
    choices = np.array([k for k in range(c) if k != blank])
    lab = RNG.choice(choices, (n, t))
    lab[0, :5] = [choices[1], choices[1], choices[0], choices[1], choices[1]]
    lab[1, :3] = choices[2 % len(choices)]
    return lab.astype(I32)


def _numpy_ctc(logits: np.ndarray, logit_len: np.ndarray, labels: np.ndarray, label_len: np.ndarray,
               blank: int, merge: bool) -> np.ndarray:
    """CTC without label preprocessing by the forward recursion in float64."""
    out = []
    for b in range(logits.shape[0]):
        x = logits[b, : logit_len[b]].astype(np.float64)
        lp = x - np.log(np.exp(x).sum(-1, keepdims=True))
        ext = [blank]
        for lab in labels[b, : label_len[b]]:
            ext += [int(lab), blank]
        alpha = np.full(len(ext), -np.inf)
        alpha[0] = lp[0, ext[0]]
        if len(ext) > 1:
            alpha[1] = lp[0, ext[1]]
        for t in range(1, len(x)):
            new = np.full(len(ext), -np.inf)
            for s in range(len(ext)):
                terms = ([alpha[s]] if merge or ext[s] == blank else []) + ([alpha[s - 1]] if s > 0 else [])
                if s > 1 and ext[s] != blank and (not merge or ext[s] != ext[s - 2]):
                    terms.append(alpha[s - 2])
                new[s] = np.logaddexp.reduce(terms) + lp[t, ext[s]]
            alpha = new
        out.append(-np.logaddexp.reduce(alpha[-2:]))
    return np.array(out, F)


def _case(name: str, attrs: dict, logits: np.ndarray, logit_len: np.ndarray, labels: np.ndarray,
          label_len: np.ndarray, blank: int | None = None, runtime_blank: bool = False, **kw) -> Case:
    specs = [(logits.shape, logits.dtype.type), (logit_len.shape, logit_len.dtype.type),
             (labels.shape, labels.dtype.type), (label_len.shape, label_len.dtype.type)]
    values = [logits, logit_len, labels, label_len]
    if runtime_blank:
        specs.append(((), I32))
        values.append(np.array(blank, I32))
        return Case(name, lambda *p: ops4.ctc_loss(*p, **attrs), specs, values=values, **kw)
    if blank is not None:
        return Case(name, lambda *p, bl=blank: ops4.ctc_loss(*p, const(bl, I64), **attrs), specs, values=values, **kw)
    return Case(name, lambda *p: ops4.ctc_loss(*p, **attrs), specs, values=values, **kw)


def _logits(n: int, t: int, c: int, scale: float = 2.0) -> np.ndarray:
    return (RNG.standard_normal((n, t, c)) * scale).astype(F)


CASES = []
for tag, attrs in ATTRS:
    CASES += [
        _case(f"{tag}-default-blank", attrs, _logits(N, T, C), np.array([8, 5, 7], I32), _labels(N, T, C, C - 1),
              np.array([5, 3, 4], I32)),
        _case(f"{tag}-blank0-const", attrs, _logits(N, T, C), np.array([8, 8, 6], I32), _labels(N, T, C, 0),
              np.array([4, 3, 2], I32), blank=0),
        _case(f"{tag}-blank2-runtime", attrs, _logits(N, T, C), np.array([7, 8, 3], I32), _labels(N, T, C, 2),
              np.array([5, 3, 1], I32), blank=2, runtime_blank=True),
        # lengths equal to the logit lengths: repeats cannot all be placed (infinite loss) unless merged away
        _case(f"{tag}-tight", attrs, _logits(N, T, C), np.array([5, 3, 8], I32), _labels(N, T, C, C - 1),
              np.array([5, 3, 8], I32)),
        _case(f"{tag}-long", attrs, _logits(2, 40, 12, 3.0), np.array([40, 23], I32), _labels(2, 40, 12, 11),
              np.array([17, 9], I32)),
    ]
labels_with_blank = _labels(N, T, C, C - 1)
labels_with_blank[:, 1] = C - 1
CASES += [
    _case("labels-hold-the-blank", {}, _logits(N, T, C), np.array([8, 6, 7], I32), labels_with_blank,
          np.array([4, 3, 5], I32)),
    _case("one-step", {}, _logits(N, T, C), np.array([1, 1, 2], I32), _labels(N, T, C, C - 1),
          np.array([1, 1, 1], I32)),
    _case("exp-overflow", {}, _logits(N, T, C, 60.0), np.array([8, 5, 7], I32), _labels(N, T, C, C - 1),
          np.array([3, 2, 4], I32)),
    _case("i64-lengths", {}, _logits(N, T, C), np.array([8, 5, 7], I64), _labels(N, T, C, C - 1).astype(I64),
          np.array([3, 2, 4], I64), blank=C - 1),
    _case("f16-logits", {}, _logits(N, T, C).astype(F16), np.array([8, 5, 7], I32), _labels(N, T, C, C - 1),
          np.array([3, 2, 4], I32), rtol=1e-3, atol=1e-3),
]
distinct = np.tile(np.arange(T, dtype=I32) % (C - 1), (N, 1))  # no repeats: the preprocessing keeps them all
for tag, attrs in ATTRS:
    merge = bool(attrs.get("ctc_merge_repeated", True))
    CASES.append(_case(f"{tag}-empty-labels", attrs, _logits(N, T, C), np.array([8, 4, 6], I32), distinct,
                       np.array([0, 3, 0], I32), expected=lambda *v, m=merge: [_numpy_ctc(*v, C - 1, m)]))


@pytest.mark.parametrize("case", params(CASES))
def test_ctc_loss(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)


@pytest.mark.parametrize("tag,attrs", ATTRS[:3])
def test_ctc_loss_dynamic_dims(tmp_path: Path, tag: str, attrs: dict) -> None:
    """Batch, time and classes unknown until run time, a run-time blank index."""
    ps = [ops4.parameter([-1, -1, -1], F, name="logits"), ops4.parameter([-1], I32, name="logit_length"),
          ops4.parameter([-1, -1], I32, name="labels"), ops4.parameter([-1], I32, name="label_length"),
          ops4.parameter([], I32, name="blank")]
    values = [_logits(4, 11, 6), np.array([11, 7, 9, 2], I32), _labels(4, 11, 6, 1), np.array([6, 3, 5, 1], I32),
              np.array(1, I32)]
    check_model(ov.Model([ops4.ctc_loss(*ps, **attrs)], ps), values, tmp_path)
