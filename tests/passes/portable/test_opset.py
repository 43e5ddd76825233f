"""The lowest opset at which every node means the same (passes/portable/opset.py): the portable model declares it,
each of its nodes has there the schema it had at the translation's opset, and results stay OpenVINO's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx

from tests.utils import assert_equivalent, convert_checked

SAMPLE = Path(__file__).resolve().parents[3] / "samples" / "ti_lstm" / "model.xml"


def _opset(proto: onnx.ModelProto) -> int:
    return next(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx"))


def _schemas(proto: onnx.ModelProto, opset: int) -> dict[str, int]:
    return {n.op_type: onnx.defs.get_schema(n.op_type, opset, "").since_version for n in proto.graph.node}


def test_ti_lstm_at_its_lowest_opset() -> None:
    default = convert_checked(SAMPLE)
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((1, *[d.dim_value for d in i.type.tensor_type.shape.dim][1:])).astype(np.float32)
              for i in default.graph.input]
    portable = assert_equivalent(SAMPLE, inputs, portable=True)
    assert _opset(portable) == 14 < _opset(default) == 17  # LSTM-14 and Reshape-14 are its newest ops
    assert _schemas(portable, 14) == _schemas(default, 17)
