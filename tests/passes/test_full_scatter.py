"""A ScatterND writing every row of a fresh buffer of x's shape with x's rows, in order (TensorFlow 1's
TensorArray.unstack), becomes x; any other scatter stays. Results stay OpenVINO's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset13 as ops
import pytest

from tests.utils import assert_equivalent, count_ops, rng_inputs, save_ir

T, B, W = 5, 2, 3


def unstack(*, dynamic: bool = False, first: int = 0, stop_short: int = 0, reverse: bool = False,
            extra_rows: int = 0) -> ov.Model:
    """ScatterNDUpdate(Broadcast(zeros [n + extra_rows, 1, 1], Shape(x)), Range(...) as a column, x) * 2, with
    n = x's first dim read at run time; the range is 0..n - stop_short - 1 (from `first`), or n - 1..0."""
    X = ops.parameter([-1 if dynamic else T, B, W], np.float32, name="X")
    n = ops.gather(ops.shape_of(X), ops.constant(np.int64(0)), ops.constant(np.int64(0)))
    rows = ops.add(n, ops.constant(np.int64(extra_rows))) if extra_rows else n
    zeros = ops.broadcast(ops.constant(np.float32(0)),
                          ops.concat([ops.unsqueeze(rows, ops.constant(np.int64(0))),
                                      ops.constant(np.array([1, 1], np.int64))], 0))
    if extra_rows:  # the buffer: rows + extra_rows rows of x's row shape
        data = ops.broadcast(zeros, ops.concat([ops.unsqueeze(rows, ops.constant(np.int64(0))),
                                                ops.constant(np.array([B, W], np.int64))], 0))
    else:
        data = ops.broadcast(zeros, ops.shape_of(X))
    if reverse:
        rng = ops.range(ops.subtract(n, ops.constant(np.int64(1))), ops.constant(np.int64(-1)),
                        ops.constant(np.int64(-1)), "i64")
    else:
        stop = ops.subtract(n, ops.constant(np.int64(stop_short))) if stop_short else n
        rng = ops.range(ops.constant(np.int64(first)), stop, ops.constant(np.int64(1)), "i64")
    updates = X if reverse or not (stop_short or first) else ops.slice(
        X, ops.constant(np.array([first], np.int64)), ops.unsqueeze(stop, ops.constant(np.int64(0))),
        ops.constant(np.array([1], np.int64)))  # as many rows as the range
    scattered = ops.scatter_nd_update(data, ops.unsqueeze(rng, ops.constant(np.int64(1))), updates)
    return ov.Model([ops.multiply(scattered, ops.constant(np.float32(2)))], [X])


def _scatters(model: ov.Model, tmp_path: Path) -> int:
    xml = save_ir(model, tmp_path)
    inputs = rng_inputs([((T, B, W), np.float32)])
    assert_equivalent(xml, inputs, fuse=False, optimize=False)
    return count_ops(assert_equivalent(xml, inputs), "ScatterND")


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "run_time_length"])
def test_full_scatter_is_the_tensor(tmp_path: Path, dynamic: bool) -> None:
    assert _scatters(unstack(dynamic=dynamic), tmp_path) == 0


@pytest.mark.parametrize("kw", [{"stop_short": 1}, {"first": 1}, {"reverse": True}, {"extra_rows": 1}],
                         ids=["rows_left_out", "first_row_left_out", "rows_reversed", "buffer_longer"])
def test_other_scatters_stay(tmp_path: Path, kw: dict) -> None:
    assert _scatters(unstack(**kw), tmp_path) == 1
