"""PriorBox-1/8 and PriorBoxClustered-1 (priors.py) against OpenVINO: constant and run-time sizes, every attribute."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino.opset1 as ops1
import openvino.opset8 as ops8
import pytest

from tests.translate.ops.cases import Case, const, params, run_case

F, I32, I64 = np.float32, np.int32, np.int64
FEAT, IMG = np.array([3, 4], I64), np.array([30, 44], I64)

BASE = {"offset": 0.5, "min_size": [4.0, 9.0], "max_size": [8.0, 15.0], "aspect_ratio": [2.0, 3.0]}
PRIOR_BOX = {
    "basic": BASE,
    "flip-clip": {**BASE, "flip": True, "clip": True},
    "step": {**BASE, "step": 8.0, "offset": 0.3},
    "variance1": {**BASE, "variance": [0.2]},
    "variance4": {**BASE, "variance": [0.1, 0.1, 0.2, 0.2], "flip": True},
    "repeated-ratios": {**BASE, "aspect_ratio": [2.0, 1.0, 0.5, 2.0], "flip": True},
    "no-scale-all-sizes": {**BASE, "scale_all_sizes": False, "min_size": [0.1, 0.2], "max_size": [0.3, 0.4]},
    "no-scale-all-sizes-step": {**BASE, "scale_all_sizes": False, "min_size": [0.1], "max_size": [0.3],
                                "step": 0.25},
    "fixed-size-density": {"offset": 0.5, "fixed_size": [8.0, 15.0], "density": [2.0, 3.0], "aspect_ratio": [2.0]},
    "fixed-ratio": {"offset": 0.5, "fixed_size": [9.0], "density": [3.0], "fixed_ratio": [1.0, 2.0], "clip": True},
    "fixed-size-and-min": {"offset": 0.5, "fixed_size": [7.0], "density": [2.0], "min_size": [4.0],
                           "aspect_ratio": [2.0], "flip": True},
}

CASES = []
# fixed_size: OpenVINO folds constant inputs with its reference code, which halves fixed_size as an integer, while
# its CPU plugin (like the specification) halves it as a float; the plugin is the reference here (run-time sizes)
for name in ("fixed-ratio", "fixed-size-and-min", "fixed-size-density"):
    for version, mod in ((1, ops1), (8, ops8)):
        CASES.append(Case(f"prior-box-{version}-{name}", lambda f, i, a=PRIOR_BOX[name], m=mod: m.prior_box(f, i, a),
                          [((2,), I64), ((2,), I64)], values=[FEAT, IMG]))
for name, attrs in PRIOR_BOX.items():
    if name.startswith("fixed"):
        continue
    CASES.append(Case(f"prior-box-1-{name}", lambda a=attrs: ops1.prior_box(const(FEAT, I64), const(IMG, I64), a), []))
    for order in (True, False):
        CASES.append(Case(f"prior-box-8-{name}-order-{order}", lambda a=attrs, o=order: ops8.prior_box(
            const(FEAT, I64), const(IMG, I64), {**a, "min_max_aspect_ratios_order": o}), []))
CASES += [
    Case("prior-box-8-runtime-sizes", lambda f, i: ops8.prior_box(f, i, {**BASE, "flip": True, "clip": True}),
         [((2,), I64), ((2,), I64)], values=[FEAT, IMG]),
    Case("prior-box-8-runtime-i32-no-scale", lambda f, i: ops8.prior_box(f, i, PRIOR_BOX["no-scale-all-sizes"]),
         [((2,), I32), ((2,), I32)], values=[np.array([5, 2], I32), np.array([50, 21], I32)]),
]

CLUSTERED = {
    "basic": {"offset": 0.5, "width": [2.0, 5.5, 9.0], "height": [3.0, 4.0, 12.0]},
    "clip-variance4": {"offset": 0.5, "width": [2.0, 30.0], "height": [3.0, 50.0], "clip": True,
                       "variance": [0.1, 0.1, 0.2, 0.2]},
    "step": {"offset": 0.2, "width": [2.0], "height": [3.0], "step": 6.0},
    "step-wh": {"offset": 0.5, "width": [2.0, 4.0], "height": [3.0, 1.0], "step_w": 5.0, "step_h": 7.0,
                "variance": [0.3]},
}
for name, attrs in CLUSTERED.items():
    CASES.append(Case(f"prior-box-clustered-{name}", lambda a=attrs: ops1.prior_box_clustered(
        const(FEAT, I64), const(IMG, I64), a), []))
CASES.append(Case("prior-box-clustered-runtime", lambda f, i: ops1.prior_box_clustered(f, i, CLUSTERED["basic"]),
                  [((2,), I32), ((2,), I32)], values=[np.array([2, 5], I32), np.array([20, 40], I32)]))


@pytest.mark.parametrize("case", params(CASES))
def test_priors(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)
