"""Scans in the form every consumer reads (passes/portable/scan_captures.py, scan_axes.py): a TensorIterator slicing
axis 2 backwards, whose body reads weights the hoisting pass moved out of it, becomes a Scan over axis 0, forward,
with Transposes and reversals outside and every value it reads passed in as a carried state. OpenVINO's ONNX frontend
(which refused the outer reads) and onnx's reference implementation (which refused the axis and the direction) run
it, with OpenVINO's results on the IR."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from ir2onnx.verify.openvino_ref import run_openvino
from tests.passes.loop_models import recurrence
from tests.passes.portable.consumers import assert_read_by
from tests.utils import assert_equivalent, convert_checked, rng_inputs, save_ir


def _scan(proto: onnx.ModelProto) -> onnx.NodeProto:
    return next(n for n in proto.graph.node if n.op_type == "Scan")


def _moved(scan: onnx.NodeProto) -> bool:
    """Whether the Scan slices or stacks on an axis other than 0, or backwards."""
    return any(any(a.ints) for a in scan.attribute if a.name.startswith(("scan_input", "scan_output")))


@pytest.mark.parametrize("optimize", [True, False])
def test_backward_scan_over_axis_2(tmp_path: Path, optimize: bool) -> None:
    xml = save_ir(recurrence("ti", axis=2, reverse=True), tmp_path)
    default = convert_checked(xml, fuse=False, optimize=optimize)
    body = next(a.g for a in _scan(default).attribute if a.name == "body")
    assert _moved(_scan(default))
    outer = [name for n in body.node for name in n.input if name in {i.name for i in default.graph.initializer}]
    assert outer  # (its weights are initializers of the main graph, and so are the hoisted weight transposes)
    inputs = rng_inputs([((2, 8, 5), np.float32), ((2, 8), np.float32)])
    proto = assert_equivalent(xml, inputs, fuse=False, optimize=optimize, portable=True)
    scan = _scan(proto)
    assert not _moved(scan)
    body = next(a.g for a in scan.attribute if a.name == "body")
    known = {i.name for i in body.input} | {i.name for i in body.initializer} | {o for n in body.node for o in n.output}
    assert all(name in known for n in body.node for name in n.input if name), "the body reads an outer value"
    assert_read_by(["openvino", "reference"], proto, {"X": inputs[0], "H0": inputs[1]},
                   run_openvino(str(xml), inputs), tmp_path)
