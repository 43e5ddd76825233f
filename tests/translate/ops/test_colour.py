"""NV12/I420 to RGB/BGR (colour.py) against OpenVINO: single-plane and separate-plane inputs, u8 images (compared
exactly, so rounding and clamping must match) and f32/f16 images, even sizes down to 2x2, batches, dynamic dims."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset8 as ops8
import pytest

from tests.translate.ops.cases import Case, params, run_case
from tests.utils import check_model

F, F16, U8 = np.float32, np.float16, np.uint8
RNG = np.random.default_rng(8)
OPS = {"nv12-rgb": ops8.nv12_to_rgb, "nv12-bgr": ops8.nv12_to_bgr, "i420-rgb": ops8.i420_to_rgb,
       "i420-bgr": ops8.i420_to_bgr}


def _plane(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    if dtype == U8:
        return RNG.integers(0, 256, shape).astype(U8)
    # beyond [0, 255] too (clamping), and fractions
    return (RNG.random(shape) * 300 - 20).astype(dtype)


CASES = []
for name, op in OPS.items():
    i420 = name.startswith("i420")
    for dtype in (U8, F, F16):
        for n, h, w in ((1, 2, 2), (2, 4, 6), (1, 6, 10), (3, 10, 34)):
            tag = f"{name}-{np.dtype(dtype).name}-{n}x{h}x{w}"
            CASES.append(Case(f"{tag}-single", lambda x, o=op: o(x), [((n, h * 3 // 2, w, 1), dtype)],
                              values=[_plane((n, h * 3 // 2, w, 1), dtype)]))
            if i420:
                CASES.append(Case(f"{tag}-planes", lambda y, u, v, o=op: o(y, u, v),
                                  [((n, h, w, 1), dtype), ((n, h // 2, w // 2, 1), dtype),
                                   ((n, h // 2, w // 2, 1), dtype)],
                                  values=[_plane((n, h, w, 1), dtype), _plane((n, h // 2, w // 2, 1), dtype),
                                          _plane((n, h // 2, w // 2, 1), dtype)]))
            else:
                CASES.append(Case(f"{tag}-planes", lambda y, uv, o=op: o(y, uv),
                                  [((n, h, w, 1), dtype), ((n, h // 2, w // 2, 2), dtype)],
                                  values=[_plane((n, h, w, 1), dtype), _plane((n, h // 2, w // 2, 2), dtype)]))


@pytest.mark.parametrize("case", params(CASES))
def test_yuv_to_rgb(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)


def _u8_grid() -> np.ndarray:
    """Every (y, u, v) byte triple on a coarse grid plus values near the rounding and clamping edges."""
    vals = np.unique(np.concatenate([np.arange(0, 256, 15), [16, 17, 127, 128, 129, 235, 240, 254, 255]]))
    yy, uu, vv = np.meshgrid(vals, vals, vals, indexing="ij")
    return np.stack([yy.ravel(), uu.ravel(), vv.ravel()]).astype(U8)


@pytest.mark.parametrize("name", sorted(OPS))
def test_yuv_to_rgb_u8_all_triples(tmp_path: Path, name: str) -> None:
    """Separate planes holding one chroma sample per 2x2 block: many (y, u, v) triples, compared exactly."""
    y_vals, u_vals, v_vals = _u8_grid()
    count = y_vals.size
    y = np.repeat(np.repeat(y_vals.reshape(1, 1, count, 1), 2, 1), 2, 2)  # [1, 2, 2 * count, 1]
    u = u_vals.reshape(1, 1, count, 1)
    v = v_vals.reshape(1, 1, count, 1)
    ps = [ops8.parameter(list(y.shape), U8, name="y")]
    if name.startswith("i420"):
        ps += [ops8.parameter(list(u.shape), U8, name="u"), ops8.parameter(list(v.shape), U8, name="v")]
        values = [y, u, v]
    else:
        ps.append(ops8.parameter([1, 1, count, 2], U8, name="uv"))
        values = [y, np.concatenate([u, v], 3)]
    check_model(ov.Model([OPS[name](*ps)], ps), values, tmp_path)


@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("dtype", [U8, F])
def test_yuv_to_rgb_dynamic_dims(tmp_path: Path, name: str, dtype: type) -> None:
    x = ops8.parameter([-1, -1, -1, 1], dtype, name="x")
    check_model(ov.Model([OPS[name](x)], [x]), [_plane((2, 9, 8, 1), dtype)], tmp_path)
