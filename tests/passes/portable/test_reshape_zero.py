"""Reshape allowzero=1 as allowzero=0 where no target element can be a 0 the two readings take differently
(passes/portable/reshape_zero.py): constants other than 0, and the input's own dims at their places (also read
through a MatMul); a dim of another tensor keeps allowzero. Empty inputs included, results stay OpenVINO's."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import openvino as ov
import openvino.opset13 as ops
import pytest

from ir2onnx.verify.onnxruntime_run import run_onnxruntime
from ir2onnx.verify.openvino_ref import run_openvino
from tests.utils import assert_equivalent, convert_checked, save_ir


def _allowzero(proto: onnx.ModelProto) -> list[int]:
    return [next((a.i for a in n.attribute if a.name == "allowzero"), 0) for n in proto.graph.node
            if n.op_type == "Reshape"]


def _batch_of(x: ov.Output, rest: list[int]) -> ov.Output:
    """[x.shape[0], *rest] read at run time."""
    batch = ops.gather(ops.shape_of(x), ops.constant(np.array([0], np.int64)), ops.constant(np.int64(0)))
    return ops.concat([batch, ops.constant(np.array(rest, np.int64))], 0)


def _constant(tmp_path: Path) -> tuple[Path, list[tuple[int, ...]]]:
    x = ops.parameter([2, 3, 4], np.float32, name="x")
    return save_ir(ov.Model([ops.reshape(x, ops.constant(np.array([4, -1], np.int64)), False)], [x]), tmp_path), \
        [(2, 3, 4)]


def _own_batch(tmp_path: Path) -> tuple[Path, list[tuple[int, ...]]]:
    x = ops.parameter([-1, 6], np.float32, name="x")
    y = ops.matmul(x, ops.constant(np.arange(48, dtype=np.float32).reshape(6, 8) / 48), False, False)
    return save_ir(ov.Model([ops.reshape(y, _batch_of(x, [2, 4]), False)], [x]), tmp_path), [(3, 6), (0, 6)]


@pytest.mark.parametrize("make", [_constant, _own_batch])
def test_allowzero_dropped(tmp_path: Path, make: Callable[[Path], tuple[Path, list[tuple[int, ...]]]]) -> None:
    xml, shapes = make(tmp_path)
    assert 1 in _allowzero(convert_checked(xml))
    for shape in shapes:  # (an empty batch too: both readings give 0 there)
        proto = assert_equivalent(xml, [np.random.default_rng(0).standard_normal(shape).astype(np.float32)],
                                  portable=True)
        assert _allowzero(proto) == [0] * len(_allowzero(proto)) and _allowzero(proto)


def test_another_tensors_dim_keeps_allowzero(tmp_path: Path) -> None:
    """x [2, 0, 3] to [len(z), 5] with z empty is [0, 5]; without allowzero the 0 would copy x's 2 and fail."""
    x, z = ops.parameter([2, -1, 3], np.float32, name="x"), ops.parameter([-1], np.float32, name="z")
    xml = save_ir(ov.Model([ops.reshape(x, ops.concat([ops.shape_of(z), ops.constant(np.array([5], np.int64))], 0),
                                        False)], [x, z]), tmp_path)
    proto = convert_checked(xml, portable=True)
    assert 1 in _allowzero(proto)
    inputs = [np.zeros((2, 0, 3), np.float32), np.zeros(0, np.float32)]
    got = run_onnxruntime(proto, dict(zip(["x", "z"], inputs)))[0]
    assert got.shape == run_openvino(str(xml), inputs)[0].shape == (0, 5)
