"""Convolutions of one input by constant kernels with the same attributes run as one convolution, split by channel;
others stay apart. Results stay OpenVINO's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset13 as ops
import pytest

from tests.passes.loop_models import ops_in
from tests.utils import assert_equivalent, count_ops, rng_inputs, save_ir

FIXTURES = Path(__file__).parent.parent / "fixtures"


def _siblings(extra: str) -> ov.Model:
    """Three 3x3 convolutions of X (4, 8 and 2 output channels, one with a bias), summed after their activations,
    and one more convolution of X that differs from them by `extra` (strides, dilations, groups, kernel size, input)."""
    rng = np.random.default_rng(0)

    def w(*shape: int) -> ov.Output:
        return ops.constant((rng.standard_normal(shape) * 0.3).astype(np.float32))

    X = ops.parameter([2, 3, 7, 7], np.float32, name="X")
    Y = ops.parameter([2, 3, 7, 7], np.float32, name="Y")

    def conv(x: ov.Output, k: ov.Output, strides: list[int] | None = None, dilations: list[int] | None = None,
             pad: int = 1) -> ov.Output:
        return ops.convolution(x, k, strides or [1, 1], [pad, pad], [pad, pad], dilations or [1, 1])

    a = ops.sigmoid(conv(X, w(4, 3, 3, 3)))
    b = ops.tanh(ops.add(conv(X, w(8, 3, 3, 3)), w(1, 8, 1, 1)))
    c = conv(X, w(2, 3, 3, 3))
    other = {
        "strides": lambda: conv(X, w(2, 3, 3, 3), strides=[2, 2]),
        "dilations": lambda: conv(X, w(2, 3, 3, 3), dilations=[2, 2], pad=2),
        "groups": lambda: ops.group_convolution(X, w(3, 1, 1, 3, 3), [1, 1], [1, 1], [1, 1], [1, 1]),
        "kernel": lambda: conv(X, w(2, 3, 1, 1), pad=0),
        "input": lambda: conv(Y, w(2, 3, 3, 3)),
    }[extra]()
    return ov.Model([a, b, c, other], [X, Y])


@pytest.mark.parametrize("extra", ["strides", "dilations", "groups", "kernel", "input"])
def test_convolutions_of_one_input_merge(tmp_path: Path, extra: str) -> None:
    xml = save_ir(_siblings(extra), tmp_path)
    proto = assert_equivalent(xml, rng_inputs([((2, 3, 7, 7), np.float32), ((2, 3, 7, 7), np.float32)]))
    assert count_ops(proto, "Conv") == 2 and count_ops(proto, "Split") == 1


def test_keras_conv_lstm_gates() -> None:
    """Keras' ConvLSTM2D, as OpenVINO's TensorFlow frontend writes it: four convolutions of the step's image (lifted
    out of the loop) and four of the state (in the body), one per gate; one of each is left."""
    d = FIXTURES / "tf_conv_lstm_2d"
    stored = np.load(d / "inputs.npz")
    proto = assert_equivalent(d / "model.xml", [stored[n] for n in stored.files], rtol=1e-4)
    assert ops_in(proto.graph, "Conv", bodies=False) == 1 and ops_in(proto.graph, "Conv", bodies=True) == 1
    plain = assert_equivalent(d / "model.xml", [stored[n] for n in stored.files], rtol=1e-4, optimize=False)
    assert count_ops(plain, "Conv") == 8
