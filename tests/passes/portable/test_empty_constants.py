"""Constants without elements as ConstantOfShape (passes/portable/empty_constants.py): a Keras LSTM over a run-time
length returns, after no step, a [1, 0, 8] initializer in an If branch, which OpenVINO's ONNX frontend read as a
scalar (the If then had an output of dynamic rank, which its CPU plugin refused). tests/passes/portable/
test_fixtures.py runs the model in it."""

from __future__ import annotations

import numpy as np
import onnx

import ir2onnx
from tests.fixture_paths import fixture_dir


def _empty_initializers(graph: onnx.GraphProto) -> int:
    n = sum(int(np.prod(t.dims)) == 0 and bool(t.dims) for t in graph.initializer)
    return n + sum(_empty_initializers(a.g) for node in graph.node for a in node.attribute if a.HasField("g"))


def test_empty_branch_result() -> None:
    xml = fixture_dir("tf_keras2_lstm_last_run_time_length") / "model.xml"
    assert _empty_initializers(ir2onnx.convert(xml).graph) >= 1
    proto = ir2onnx.convert(xml, portable=True)
    assert _empty_initializers(proto.graph) == 0
    assert any(n.op_type == "ConstantOfShape" for n in proto.graph.node)
