"""SparseFillEmptyRows-16 (sparse.py) against OpenVINO: unsorted entries, duplicate positions (among up to 16 entries), leading, trailing and
consecutive empty rows, no empty rows, every row empty, i32 and i64 indices, float and integer values, constant and
run-time dense shapes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset16 as ops16
import pytest

from tests.translate.ops.cases import Case, const, params, run_case
from tests.utils import check_model

F, F16, I32, I64 = np.float32, np.float16, np.int32, np.int64
RNG = np.random.default_rng(16)


def _entries(rows: int, cols: int, count: int, skip: tuple[int, ...], itype: type) -> np.ndarray:
    """`count` random unsorted positions in rows other than `skip`; duplicates only among at most 16 entries.

    OpenVINO orders the entries with std::sort, which is not stable: beyond 16 entries (where libstdc++ stops
    sorting by insertion) entries sharing a position come in an order of its own making. A sparse tensor holds one
    value a position, so those are left out; the conversion keeps such entries in input order."""
    allowed = np.array([r for r in range(rows) if r not in skip])
    if count <= 16:
        return np.stack([RNG.choice(allowed, count), RNG.integers(0, cols, count)], 1).astype(itype)
    flat = RNG.choice(len(allowed) * cols, count, replace=False)
    return np.stack([allowed[flat // cols], flat % cols], 1).astype(itype)


def _numpy(values: np.ndarray, shape: np.ndarray, indices: np.ndarray, default: np.ndarray) -> list[np.ndarray]:
    empty = np.ones(int(shape[0]), bool)
    empty[indices[:, 0]] = False
    fill = np.stack([np.flatnonzero(empty), np.zeros(empty.sum(), int)], 1).astype(indices.dtype)
    at = np.concatenate([indices, fill])
    vals = np.concatenate([values, np.full(len(fill), default, values.dtype)])
    order = np.lexsort((at[:, 1], at[:, 0]))  # stable
    return [at[order], vals[order], empty]


CASES = []
for itype in (I64, I32):
    it = np.dtype(itype).name
    for vtype in (F, I32, I64, F16):
        vt = np.dtype(vtype).name
        for rows, cols, count, skip in ((5, 4, 3, (1, 4)), (8, 6, 12, (0, 3, 4, 7)), (4, 3, 9, ()),
                                        (6, 50, 20, (2,)), (3, 1, 2, (0, 1)), (40, 30, 200, (0, 5, 6, 39))):
            idx = _entries(rows, cols, count, skip, itype)
            vals = (RNG.standard_normal(count) * 10).astype(vtype)
            CASES.append(Case(f"{it}-{vt}-{rows}x{cols}-n{count}-empty{len(skip)}", ops16.sparse_fill_empty_rows,
                              [((count,), vtype), ((2,), itype), ((count, 2), itype), ((), vtype)],
                              values=[vals, np.array([rows, cols], itype), idx, np.array(-7, vtype)]))
    CASES += [
        Case(f"{it}-const-shape", lambda v, i, d, t=itype: ops16.sparse_fill_empty_rows(v, const([6, 5], t), i, d),
             [((4,), F), ((4, 2), itype), ((), F)],
             values=[np.arange(4, dtype=F), np.array([[5, 4], [2, 1], [5, 0], [2, 1]], itype), np.array(0.5, F)]),
        Case(f"{it}-same-position-order", ops16.sparse_fill_empty_rows,
             [((5,), F), ((2,), itype), ((5, 2), itype), ((), F)],
             values=[np.arange(1, 6, dtype=F), np.array([3, 4], itype),
                     np.array([[1, 2], [1, 0], [1, 2], [1, 0], [0, 2]], itype), np.array(-1, F)]),
        # OpenVINO fails on an empty sparse tensor (a null data pointer); numpy gives the answer
        Case(f"{it}-no-entries", ops16.sparse_fill_empty_rows, [((0,), F), ((2,), itype), ((0, 2), itype), ((), F)],
             values=[np.zeros(0, F), np.array([3, 4], itype), np.zeros((0, 2), itype), np.array(9, F)],
             expected=_numpy),
    ]


@pytest.mark.parametrize("case", params(CASES))
def test_sparse_fill_empty_rows(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)


@pytest.mark.parametrize("itype", [I32, I64])
def test_sparse_fill_empty_rows_dynamic_dims(tmp_path: Path, itype: type) -> None:
    """The number of entries unknown until run time."""
    ps = [ops16.parameter([-1], F, name="values"), ops16.parameter([2], itype, name="dense_shape"),
          ops16.parameter([-1, 2], itype, name="indices"), ops16.parameter([], F, name="default")]
    values = [np.arange(6, dtype=F), np.array([7, 3], itype), np.array([[6, 2], [1, 0], [3, 1], [1, 2], [3, 0],
                                                                       [0, 1]], itype), np.array(-2, F)]
    check_model(ov.Model(list(ops16.sparse_fill_empty_rows(*ps).outputs()), ps), values, tmp_path)
