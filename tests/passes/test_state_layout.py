"""A Loop-carried state that the body reads through one Transpose and returns through the inverse one is carried in
the body's layout: the two Transposes leave the body, one before and (where the final value is read) one after the
loop. Results stay OpenVINO's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import openvino.opset13 as ops
import pytest

from tests.fixture_paths import FIXTURES
from tests.passes.loop_models import ops_in, recurrence
from tests.utils import assert_equivalent, rng_inputs, save_ir

NCHW, NHWC = [0, 3, 1, 2], [0, 2, 3, 1]


def _nhwc_recurrence(kind: str, also_direct: bool) -> Any:
    """h' = NHWC(tanh(NCHW(h) * 0.5 + NCHW(x_t))) over NHWC images; `also_direct`: h' also adds h itself."""

    def step(x_t: Any, h: Any) -> Any:
        def nchw(v: Any) -> Any:
            return ops.transpose(v, ops.constant(np.array(NCHW, np.int64)))

        inner = ops.tanh(ops.add(ops.multiply(nchw(h), ops.constant(np.float32(0.5))), nchw(x_t)))
        out = ops.transpose(inner, ops.constant(np.array(NHWC, np.int64)))
        return ops.add(out, h) if also_direct else out

    return recurrence(kind, steps=4, image=(5, 6, 3), step=step)


@pytest.mark.parametrize("kind", ["ti", "loop"])
@pytest.mark.parametrize("also_direct", [False, True], ids=["transposed_only", "also_read_directly"])
def test_state_carried_in_the_body_layout(tmp_path: Path, kind: str, also_direct: bool) -> None:
    xml = save_ir(_nhwc_recurrence(kind, also_direct), tmp_path)
    inputs = rng_inputs([((2, 4, 5, 6, 3), np.float32), ((2, 5, 6, 3), np.float32)])
    proto = assert_equivalent(xml, inputs, fuse=False)  # the last state is an output: transposed back after
    # (the slice's own Transpose and the stacked output's stay in the body; the state's two leave it)
    assert ops_in(proto.graph, "Transpose", bodies=True) == (3 if also_direct else 2)
    if not also_direct:
        assert ops_in(proto.graph, "Transpose", bodies=False) >= 2  # before and after the loop


def test_keras_conv_lstm_states() -> None:
    """Keras' ConvLSTM2D carries h and c NHWC and its body computes NCHW: only the Transpose of the stacked row is
    left in the body."""
    d = FIXTURES / "tf_conv_lstm_2d"
    stored = np.load(d / "inputs.npz")
    proto = assert_equivalent(d / "model.xml", [stored[n] for n in stored.files], rtol=1e-4)
    assert ops_in(proto.graph, "Transpose", bodies=True) == 1
