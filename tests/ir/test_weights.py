"""Const values read from .bin files written by OpenVINO, for every element type; byte-sized types are views."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from ir2onnx.ir import load

ov = pytest.importorskip("openvino")

# (OpenVINO type name, values)
CASES: list[tuple[str, Any]] = [
    ("f32", np.array([1.5, -2.25, 3.0], np.float32)),
    ("f16", np.array([1.5, -2.25, 65504.0], np.float16)),
    ("bf16", np.array([1.0, -2.5, 3.0], ml_dtypes.bfloat16)),
    ("f64", np.array([0.1, -2.0], np.float64)),
    ("i8", np.array([-128, 5, 127], np.int8)),
    ("u8", np.array([0, 200, 255], np.uint8)),
    ("i16", np.array([-32768, 7], np.int16)),
    ("u16", np.array([65535, 1], np.uint16)),
    ("i32", np.array([-(2**31), 42], np.int32)),
    ("u32", np.array([2**32 - 1, 3], np.uint32)),
    ("i64", np.array([-(2**63), 2**40], np.int64)),
    ("u64", np.array([2**64 - 1, 9], np.uint64)),
    ("boolean", np.array([True, False, True])),
    ("u1", np.array([1, 0, 1, 1, 0, 0, 0, 1, 1], np.uint8)),
    ("u4", np.array([1, 2, 3, 15, 7], np.uint8)),
    ("i4", np.array([-1, 2, -8, 7, 3], np.int8)),
    ("u2", np.array([0, 1, 2, 3, 3, 1], np.uint8)),
    ("u3", np.array([0, 1, 2, 3, 4, 5, 6, 7, 5, 6, 7], np.uint8)),  # a partial second group of 8
    ("u6", np.array([1, 2, 3, 63, 40], np.uint8)),  # a partial second group of 4
]


def _model_with_const(et: str, values: np.ndarray) -> Any:
    import openvino.opset13 as ops

    t = getattr(ov.Type, et)
    if et in ("bf16", "u1", "u2", "u3", "u4", "i4", "u6"):
        const = ov.op.Constant(t, ov.Shape(list(values.shape)), values.astype(np.float64).tolist())
    else:
        const = ov.op.Constant(values)
    const.set_friendly_name("the_const")
    x = ops.parameter(list(values.shape), np.float32, name="x")
    return ov.Model([ops.add(x, ops.convert(const, np.float32))], [x])


@pytest.mark.parametrize(("et", "values"), CASES, ids=[c[0] for c in CASES])
def test_const_values_match_openvino(tmp_path: Path, et: str, values: np.ndarray) -> None:
    xml = tmp_path / "m.xml"
    ov.save_model(_model_with_const(et, values), str(xml), compress_to_fp16=False)
    model, weights = load(str(xml))
    const = next(layer for layer in model.graph.layers if layer.name == "the_const")
    assert const.const is not None and weights is not None
    assert const.const.element_type.name == et
    got = weights.array(const.const)
    np.testing.assert_array_equal(got.astype(np.float64), values.astype(np.float64))
    if not const.const.element_type.packed:
        assert np.shares_memory(got, weights.raw(0, weights.size)), "byte-sized constants must be zero-copy views"
        assert weights.offset_of(got) == const.const.offset  # a writer may reference these bytes in the .bin
    else:
        assert weights.offset_of(got) is None  # unpacked: computed, not the file's bytes


def test_offset_of_only_for_unchanged_views(tmp_path: Path) -> None:
    values = np.arange(24, dtype=np.float32).reshape(4, 6)
    xml = tmp_path / "m.xml"
    ov.save_model(_model_with_const("f32", values), str(xml), compress_to_fp16=False)
    model, weights = load(str(xml))
    const = next(layer for layer in model.graph.layers if layer.name == "the_const")
    assert const.const is not None and weights is not None
    view = weights.array(const.const)
    start = const.const.offset
    assert weights.offset_of(view) == start
    assert weights.offset_of(view[1:]) == start + 6 * 4  # contiguous rows: still the file's bytes
    assert weights.offset_of(view.reshape(6, 4)) == start
    assert weights.offset_of(view.T) is None  # reordered
    assert weights.offset_of(view[:, 1:]) is None  # strided
    assert weights.offset_of(view.copy()) is None  # not in the file
    assert weights.offset_of(view.astype(">f4")) is None
    assert weights.offset_of(view.view(">f4")) is None  # the file's bytes, but not read as little-endian
