"""The ONNX opset is chosen per model: the lowest that expresses every layer, or a forced one that lists the rest."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import onnx
import openvino.opset13 as ops
import pytest

import ir2onnx
from ir2onnx.translate.model import MIN_OPSET, newest_opset
from tests.utils import assert_equivalent, ov, save_ir


def _opset(proto: onnx.ModelProto) -> int:
    return next(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx"))


def _runtime_axes_model(tmp_path: Path) -> Path:
    x = ops.parameter([2, 3, 4], np.float32, name="x")
    axes = ops.parameter([1], np.int64, name="axes")
    return save_ir(ov.Model([ops.reduce_max(x, axes, keep_dims=True)], [x, axes]), tmp_path)


def test_plain_model_gets_the_base_opset(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    x = ops.parameter([2, 3], np.float32, name="x")
    xml = save_ir(ov.Model([ops.relu(x)], [x]), tmp_path)
    with caplog.at_level(logging.INFO, logger="ir2onnx"):
        proto = ir2onnx.convert(xml)
    assert _opset(proto) == MIN_OPSET
    assert f"opset {MIN_OPSET}" in caplog.text


def test_runtime_reduction_axes_raise_the_opset(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    xml = _runtime_axes_model(tmp_path)
    with caplog.at_level(logging.INFO, logger="ir2onnx"):
        proto = assert_equivalent(xml, [np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32),
                                        np.array([1], np.int64)])
    assert _opset(proto) == 18
    assert "opset 18" in caplog.text and "ReduceMax" in caplog.text and "run-time axes" in caplog.text


def test_forced_opset_lists_every_layer_that_needs_more(tmp_path: Path) -> None:
    x = ops.parameter([2, 3, 4], np.float32, name="x")
    a1 = ops.parameter([1], np.int64, name="a1")
    a2 = ops.parameter([1], np.int64, name="a2")
    model = ov.Model([ops.reduce_max(x, a1, keep_dims=True), ops.reduce_min(x, a2, keep_dims=True)], [x, a1, a2])
    xml = save_ir(model, tmp_path)
    with pytest.raises(ir2onnx.ConversionError) as info:
        ir2onnx.convert(xml, opset=17)
    text = str(info.value)
    assert "--opset 17 cannot express 2 layer(s)" in text
    assert "ReduceMax" in text and "ReduceMin" in text and "needs opset 18" in text
    assert _opset(ir2onnx.convert(xml, opset=18)) == 18


def test_opset_outside_the_range_is_refused(tmp_path: Path) -> None:
    xml = _runtime_axes_model(tmp_path)
    for bad in (MIN_OPSET - 1, newest_opset() + 1):
        with pytest.raises(ir2onnx.ConversionError, match=f"opset {bad} is outside"):
            ir2onnx.convert(xml, opset=bad)


def test_newest_opset_is_one_onnxruntime_runs() -> None:
    assert newest_opset() >= 21
    assert newest_opset() <= onnx.defs.onnx_opset_version()
