"""SegmentMax-16 (segment.py) against OpenVINO: with and without num_segments (constant and run-time, smaller and
larger than the ids need), fill modes ZERO and LOWEST, empty segments, NaN and -inf elements, float, f16 and
integer data of ranks 1 to 3, types the plugin reduces in f32 or i32."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset16 as ops16
import pytest

from tests.translate.ops.cases import Case, const, params, run_case
from tests.utils import check_model

F, F16, I32, I64, I8, U8 = np.float32, np.float16, np.int32, np.int64, np.int8, np.uint8
RNG = np.random.default_rng(11)
IDS = np.array([0, 0, 2, 2, 2, 5], I32)  # segments 1, 3 and 4 are empty


def _data(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    if np.dtype(dtype).kind == "f":
        return RNG.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return RNG.integers(max(info.min, -100), min(info.max, 200), shape).astype(dtype)


def _numpy_segment_max(data: np.ndarray, ids: np.ndarray, n: int, fill_mode: str) -> np.ndarray:
    low = np.finfo(data.dtype).min if data.dtype.kind == "f" else np.iinfo(data.dtype).min
    out = np.full((n, *data.shape[1:]), low if fill_mode == "LOWEST" else 0, data.dtype)
    for s in range(n):
        rows = data[ids == s]
        if len(rows):
            out[s] = rows.max(axis=0)
    return out


CASES = []
for fill in ("ZERO", "LOWEST"):
    for dtype in (F, I32, I64, I8, U8, F16, np.float64, np.int16, np.uint16, np.uint32, np.uint64):
        CASES.append(Case(f"infer-count-{fill}-{np.dtype(dtype).name}",
                          lambda d, i, fm=fill: ops16.segment_max(d, i, fill_mode=fm),
                          [((6, 3), dtype), ((6,), I32)], values=[_data((6, 3), dtype), IDS]))
    for n in (0, 2, 6, 9):
        CASES.append(Case(f"const-count{n}-{fill}", lambda d, i, fm=fill, k=n: ops16.segment_max(
            d, i, const(k, I64), fill_mode=fm), [((6, 2, 2), F), ((6,), I64)],
            values=[_data((6, 2, 2), F), IDS.astype(I64)]))
        CASES.append(Case(f"runtime-count{n}-{fill}", lambda d, i, k, fm=fill: ops16.segment_max(d, i, k, fill_mode=fm),
                          [((6,), I32), ((6,), I32), ((), I32)],
                          values=[_data((6,), I32), IDS, np.array(n, I32)]))
    CASES += [
        Case(f"nan-inf-{fill}", lambda d, i, fm=fill: ops16.segment_max(d, i, fill_mode=fm),
             [((6,), F), ((6,), I32)],
             values=[np.array([-np.inf, np.nan, np.nan, 1.0, np.nan, -np.inf], F), IDS]),
        # i64, u64 and u32 data is reduced as its low 32 bits (wrapping), as the plugin does
        Case(f"wide-int64-{fill}", lambda d, i, fm=fill: ops16.segment_max(d, i, fill_mode=fm),
             [((6,), I64), ((6,), I32)],
             values=[np.array([2**40 + 5, 3, -2**31 - 7, 2**32 + 1, 9, 2**33], I64), IDS]),
        Case(f"wide-uint32-{fill}", lambda d, i, fm=fill: ops16.segment_max(d, i, fill_mode=fm),
             [((6,), np.uint32), ((6,), I32)],
             values=[np.array([2**31 + 5, 3, 2**32 - 9, 2**32 - 1, 0, 2**31], np.uint32), IDS]),
        Case(f"one-segment-{fill}", lambda d, i, fm=fill: ops16.segment_max(d, i, fill_mode=fm),
             [((5, 4), F), ((5,), I64)], values=[_data((5, 4), F), np.zeros(5, I64)]),
        Case(f"leading-empty-{fill}", lambda d, i, fm=fill: ops16.segment_max(d, i, fill_mode=fm),
             [((4, 2), I32), ((4,), I32)], values=[_data((4, 2), I32), np.array([3, 3, 4, 7], I32)]),
        Case(f"all-distinct-{fill}", lambda d, i, fm=fill: ops16.segment_max(d, i, fill_mode=fm),
             [((7, 3), F), ((7,), I32)], values=[_data((7, 3), F), np.arange(7, dtype=I32)]),
        # OpenVINO leaves the output unwritten when the data has no rows (it returns uninitialised memory)
        Case(f"no-rows-count3-{fill}", lambda d, i, k, fm=fill: ops16.segment_max(d, i, k, fill_mode=fm),
             [((0, 2), F), ((0,), I32), ((), I32)],
             values=[np.zeros((0, 2), F), np.zeros(0, I32), np.array(3, I32)],
             expected=lambda d, i, k, fm=fill: [_numpy_segment_max(d, i, int(k), fm)]),
    ]


@pytest.mark.parametrize("case", params(CASES))
def test_segment_max(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)


@pytest.mark.parametrize("fill", ["ZERO", "LOWEST"])
@pytest.mark.parametrize("with_count", [False, True])
def test_segment_max_dynamic_dims(tmp_path: Path, fill: str, with_count: bool) -> None:
    """Every dim unknown until run time."""
    ps = [ops16.parameter([-1, -1, -1], F, name="d"), ops16.parameter([-1], I64, name="i")]
    values = [_data((7, 2, 3), F), np.array([1, 1, 1, 3, 3, 6, 6], I64)]
    if with_count:
        ps.append(ops16.parameter([], I64, name="n"))
        values.append(np.array(5, I64))
    check_model(ov.Model([ops16.segment_max(*ps, fill_mode=fill)], ps), values, tmp_path)
