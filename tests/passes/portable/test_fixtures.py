"""Portable conversions of stored IRs read and run by other ONNX consumers, with OpenVINO's results on the IR: the
full ONNX checker, onnxruntime (tight), OpenVINO's ONNX frontend and onnx's reference implementation. A sample of the
fixtures, one per form the portable stage rewrites (scripts/sweep/portable_sweep.py runs every fixture through these
and onnx2torch, onnxsim and onnxslim, and prints the table docs/passes.md#portable-output summarises).

The consumers left out, each for a named reason: OpenVINO's ONNX frontend has no Optional ops (a stateful model's
state inputs, which a call may leave out); onnx's reference implementation computes a Loop's scan outputs of rank 2 or
more wrongly (np.vstack joins them along their first axis instead of stacking them: portable_sweep.reference_defects).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

import ir2onnx
from ir2onnx.verify.compare import compare_output
from ir2onnx.verify.onnxruntime_run import run_onnxruntime
from tests.fixture_paths import FIXTURES
from tests.passes.portable.consumers import sweep

ROOT = FIXTURES.parents[1]
OPTIONAL_STATES = "OpenVINO's ONNX frontend has no Optional ops (the state inputs)"
LOOP_STACKS = "onnx.reference joins Loop scan outputs of rank >= 2 with np.vstack"

# IR -> {consumer: why it is left out}; the form the IR exercises in a comment
CASES: dict[str, dict[str, str]] = {
    "samples/ti_lstm/model.xml": {},  # the lowest opset (14)
    "samples/nested/model.xml": {},  # a TensorIterator in a Loop
    "samples/streaming_lstm/model.xml": {"openvino": OPTIONAL_STATES},  # variables
    "tests/fixtures/ov_ti_unnamed_ports/model.xml": {},  # a Scan over axis 1
    "tests/fixtures/rnn_keras_gru/model.xml": {},  # a Scan body reading outer values
    "tests/fixtures/tf_conv_lstm_2d/model.xml": {"reference": LOOP_STACKS},  # body input shapes, SAME pads
    "tests/fixtures/tf_keras2_lstm_last_run_time_length/model.xml": {},  # an empty constant in an If branch
    "tests/fixtures/paddle_lstm_bidirectional_2layers/model.xml": {},  # empty constants in guards' branches
}


def _left_out(proto: onnx.ModelProto) -> dict[str, str]:
    """Which consumers this model leaves out, found from the model (checked against CASES)."""
    out = {}
    if any(i.type.HasField("optional_type") for i in proto.graph.input):
        out["openvino"] = OPTIONAL_STATES
    if any("Loop scan outputs" in d for d in sweep.reference_defects(proto)):
        out["reference"] = LOOP_STACKS
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_portable_fixture(tmp_path: Path, case: str) -> None:
    xml = ROOT / case
    proto = ir2onnx.convert(xml, portable=True)
    onnx.checker.check_model(proto, full_check=True)
    assert _left_out(proto) == CASES[case]
    feed = sweep.feed_for(xml, proto)
    reference = sweep.reference_outputs(xml, proto, feed)
    names = [o.name for o in proto.graph.output]
    got = run_onnxruntime(proto, feed)
    assert len(got) == len(reference)
    for name, g, r in zip(names, got, reference):
        c = compare_output(name, np.asarray(g), np.asarray(r), 1e-5, 1e-6, scaled=True)
        assert g.dtype == r.dtype and c.passed, f"onnxruntime: {name}: {c.message} (max abs {c.max_abs_error})"
    path = tmp_path / "model.onnx"
    onnx.save(proto, str(path))
    for tool in ("openvino", "reference"):
        if tool not in CASES[case]:
            result = sweep.run_tool(tool, proto, path, feed, reference, 120)
            assert result["status"] == "ok", f"{tool}: {result}"
