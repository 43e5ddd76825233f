"""GridSample (sampling.py) against OpenVINO."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import openvino.opset9 as ops9
import pytest

from tests.convert.ops.cases import Case, params, run_case

F = np.float32
RNG = np.random.default_rng(9)
X = RNG.standard_normal((2, 3, 5, 6)).astype(F)
GRID = (RNG.random((2, 4, 7, 2)) * 3 - 1.5).astype(F)  # inside and outside [-1, 1]
TICKS = (np.arange(-12, 13) / 10.0).astype(F)  # exact halves between pixels for nearest
TIES = np.stack(np.meshgrid(TICKS, TICKS), -1)[None].repeat(2, 0).astype(F)

CASES = [
    Case(f"grid-sample-{mode}-{pad}-{'ac' if ac else 'noac'}-{gname}",
         lambda x, g, m=mode, p=pad, a=ac: ops9.grid_sample(x, g, {"align_corners": a, "mode": m, "padding_mode": p}),
         [((2, 3, 5, 6), F), (grid.shape, F)], values=[X, grid], rtol=1e-4, atol=1e-5)
    for mode, pad, ac in itertools.product(["bilinear", "bicubic", "nearest"], ["zeros", "border", "reflection"],
                                           [False, True])
    for gname, grid in (("random", GRID), ("ties", TIES))
]
CASES += [Case(f"grid-sample-{mode}-onnx-opset{opset}",
               lambda x, g, m=mode: ops9.grid_sample(x, g, {"align_corners": True, "mode": m, "padding_mode": "border"}),
               [((2, 3, 5, 6), F), (GRID.shape, F)], values=[X, GRID], opset=opset, rtol=1e-4, atol=1e-5)
          for mode in ("bilinear", "bicubic", "nearest") for opset in (20, 21)]
CASES.append(Case("grid-sample-dynamic", lambda x, g: ops9.grid_sample(x, g, {"mode": "bilinear"}),
                  [((-1, 3, -1, -1), F), ((-1, -1, -1, 2), F)], values=[X, GRID]))


@pytest.mark.parametrize("case", params(CASES))
def test_sampling(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)
