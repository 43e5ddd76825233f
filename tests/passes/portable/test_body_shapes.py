"""Loop body inputs declare the shapes known for them (passes/portable/body_shapes.py): Keras ConvLSTM2D's states,
carried in the body's layout (passes/state_layout.py), are [2, 3, 5, 5] at every step; declared, OpenVINO's ONNX
frontend converts the body's Conv (it refused an input of unknown rank). tests/passes/portable/test_fixtures.py runs
the model in it."""

from __future__ import annotations

import onnx

import ir2onnx
from tests.fixture_paths import fixture_dir


def _undeclared(proto: onnx.ModelProto) -> list[str]:
    """Body inputs of the model's Loops without a shape."""
    return [i.name for n in proto.graph.node if n.op_type == "Loop" for a in n.attribute if a.name == "body"
            for i in a.g.input if not i.type.tensor_type.HasField("shape")]


def test_conv_lstm_states() -> None:
    xml = fixture_dir("tf_conv_lstm_2d") / "model.xml"
    assert len(_undeclared(ir2onnx.convert(xml))) == 2
    proto = ir2onnx.convert(xml, portable=True)
    assert not _undeclared(proto)
    body = next(a.g for n in proto.graph.node if n.op_type == "Loop" for a in n.attribute if a.name == "body")
    states = [[d.dim_value for d in i.type.tensor_type.shape.dim] for i in body.input[4:6]]
    assert states == [[2, 3, 5, 5]] * 2
