"""Explicit pads (passes/portable/pads.py): SAME_UPPER / SAME_LOWER over run-time image sizes become a Pad computed
from the input's shape, pooling pads that differ at the two ends become a Pad of the difference and symmetric pads
(an average that excludes padding: a quotient of two zero-padded averages). Results stay OpenVINO's, on image sizes
that pad evenly and oddly."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import openvino as ov
import openvino.opset13 as ops
import pytest

from ir2onnx.verify.openvino_ref import run_openvino
from tests.passes.portable.consumers import assert_read_by
from tests.utils import assert_equivalent, convert_checked, count_ops


def _pads(proto: onnx.ModelProto) -> list[tuple[str, list[int], str]]:
    """(op, pads, auto_pad) of each convolution and pooling node."""
    out = []
    for n in proto.graph.node:
        if n.op_type in ("Conv", "MaxPool", "AveragePool"):
            a = {x.name: x for x in n.attribute}
            out.append((n.op_type, list(a["pads"].ints) if "pads" in a else [],
                        a["auto_pad"].s.decode() if "auto_pad" in a else "NOTSET"))
    return out


def _symmetric(pads: list[int]) -> bool:
    return pads[:len(pads) // 2] == pads[len(pads) // 2:]


SAME: dict[str, Callable[[Any], Any]] = {
    "max": lambda x: ops.max_pool(x, [2, 2], [1, 1], [0, 0], [0, 0], [3, 3], auto_pad="same_upper").output(0),
    "avg_excluding": lambda x: ops.avg_pool(x, [2, 2], [0, 0], [0, 0], [3, 3], True, auto_pad="same_lower"),
    "avg_including": lambda x: ops.avg_pool(x, [2, 2], [0, 0], [0, 0], [3, 3], False, auto_pad="same_upper"),
    "conv": lambda x: ops.convolution(x, ops.constant(np.linspace(-1, 1, 36, dtype=np.float32).reshape(2, 2, 3, 3)),
                                      [2, 2], [0, 0], [0, 0], [1, 1], auto_pad="same_upper"),
}


@pytest.mark.parametrize("op", sorted(SAME))
def test_same_padding_over_run_time_sizes(tmp_path: Path, op: str) -> None:
    x = ops.parameter([1, 2, -1, -1], np.float32, name="x")
    xml = tmp_path / "m.xml"
    ov.save_model(ov.Model([SAME[op](x)], [x]), str(xml), compress_to_fp16=False)
    assert any(auto.startswith("SAME") for _, _, auto in _pads(convert_checked(xml)))
    for size in ((7, 6), (5, 9)):
        inputs = [np.random.default_rng(1).standard_normal((1, 2, *size)).astype(np.float32)]
        proto = assert_equivalent(xml, inputs, portable=True)
        assert [auto for _, _, auto in _pads(proto)] == ["NOTSET"] * len(_pads(proto)) and count_ops(proto, "Pad")
    assert_read_by(["openvino", "reference"], proto, {"x": inputs[0]}, run_openvino(str(xml), inputs), tmp_path)


@pytest.mark.parametrize("exclude", [True, False])
def test_asymmetric_average_pads(tmp_path: Path, exclude: bool) -> None:
    x = ops.parameter([1, 2, 6, 7], np.float32, name="x")
    xml = tmp_path / "m.xml"
    ov.save_model(ov.Model([ops.avg_pool(x, [2, 2], [0, 1], [1, 0], [2, 3], exclude)], [x]), str(xml),
                  compress_to_fp16=False)
    assert not all(_symmetric(p) for _, p, _ in _pads(convert_checked(xml)))
    inputs = [np.random.default_rng(2).standard_normal((1, 2, 6, 7)).astype(np.float32)]
    proto = assert_equivalent(xml, inputs, portable=True)
    assert all(_symmetric(p) for _, p, _ in _pads(proto)) and count_ops(proto, "Pad") == (2 if exclude else 1)
    assert_read_by(["openvino", "reference"], proto, {"x": inputs[0]}, run_openvino(str(xml), inputs), tmp_path)


def test_asymmetric_max_pads(tmp_path: Path) -> None:
    x = ops.parameter([1, 2, 6, 7], np.float32, name="x")
    xml = tmp_path / "m.xml"
    pool = ops.max_pool(x, [2, 2], [1, 1], [0, 1], [1, 0], [2, 3]).output(0)
    ov.save_model(ov.Model([pool], [x]), str(xml), compress_to_fp16=False)
    assert not all(_symmetric(p) for _, p, _ in _pads(convert_checked(xml)))
    inputs = [np.random.default_rng(3).standard_normal((1, 2, 6, 7)).astype(np.float32) - 5]  # (negative: the
    # padding's own value must not win)
    proto = assert_equivalent(xml, inputs, portable=True)
    assert all(_symmetric(p) for _, p, _ in _pads(proto)) and count_ops(proto, "Pad") == 1
