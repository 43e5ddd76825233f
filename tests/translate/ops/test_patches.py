"""ExtractImagePatches-3 (patches.py) against OpenVINO: patch sizes, strides and rates along each axis, auto_pad
valid/same_upper/same_lower (odd and even padding totals), images smaller than a patch, dynamic spatial dims,
float and integer images."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset3 as ops3
import pytest

from tests.translate.ops.cases import Case, params, run_case
from tests.utils import check_model

F, I32, U8 = np.float32, np.int32, np.uint8
RNG = np.random.default_rng(3)

# (name, image shape, sizes, strides, rates)
GEOMETRIES = [
    ("1x1", (1, 2, 5, 5), [1, 1], [1, 1], [1, 1]),
    ("3x3", (2, 3, 7, 8), [3, 3], [1, 1], [1, 1]),
    ("3x3-s2", (1, 2, 9, 10), [3, 3], [2, 2], [1, 1]),
    ("2x4-s3x2-r2x1", (1, 3, 10, 11), [2, 4], [3, 2], [2, 1]),
    ("3x2-s1x4-r1x3", (2, 1, 8, 13), [3, 2], [1, 4], [1, 3]),
    ("4x4-s5-r2", (1, 2, 12, 9), [4, 4], [5, 5], [2, 2]),
    ("2x2-s2-even", (1, 1, 6, 6), [2, 2], [2, 2], [1, 1]),
    ("larger-than-image", (1, 2, 3, 4), [3, 5], [2, 2], [2, 1]),
    ("wide-stride", (1, 2, 5, 5), [2, 2], [7, 6], [1, 1]),
]

CASES = []
for name, shape, sizes, strides, rates in GEOMETRIES:
    for pad in ("valid", "same_upper", "same_lower"):
        CASES.append(Case(f"{name}-{pad}", lambda x, s=sizes, st=strides, r=rates, p=pad:
                          ops3.extract_image_patches(x, s, st, r, p), [(shape, F)]))
CASES += [
    Case("int32-same_upper", lambda x: ops3.extract_image_patches(x, [2, 3], [2, 1], [1, 2], "same_upper"),
         [((1, 2, 7, 6), I32)]),
    Case("u8-same_lower", lambda x: ops3.extract_image_patches(x, [3, 2], [1, 2], [2, 1], "same_lower"),
         [((2, 1, 6, 7), U8)]),
]


@pytest.mark.parametrize("case", params(CASES))
def test_extract_image_patches(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)


@pytest.mark.parametrize("pad", ["valid", "same_upper", "same_lower"])
@pytest.mark.parametrize("hw", [(9, 7), (4, 11), (2, 3)])
def test_extract_image_patches_dynamic_dims(tmp_path: Path, pad: str, hw: tuple[int, int]) -> None:
    """Sizes and pads computed from the run-time image shape."""
    x = ops3.parameter([-1, 2, -1, -1], F, name="x")
    model = ov.Model([ops3.extract_image_patches(x, [3, 2], [2, 3], [1, 2], pad)], [x])
    check_model(model, [RNG.standard_normal((2, 2, *hw)).astype(F)], tmp_path)
