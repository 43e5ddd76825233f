"""Convolutions of one input by constant kernels with the same attributes, in a loop body, run as one convolution
split by channel; others, and those outside loops, stay apart. Results stay OpenVINO's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov
import openvino.opset13 as ops
import pytest

from tests.fixture_paths import FIXTURES
from tests.passes.loop_models import ops_in, recurrence
from tests.utils import assert_equivalent, count_ops, rng_inputs, save_ir


def _siblings(kind: str, extra: str) -> ov.Model:
    """A TensorIterator or Loop over images: h' = tanh(sigmoid(h * K1) + tanh(h * K2 + b) + h * K3 + mean(other)),
    three 3x3 convolutions of the state h and one more that differs from them by `extra` (strides, dilations, groups,
    kernel size, or reading the step's image instead)."""
    rng = np.random.default_rng(0)

    def w(*shape: int) -> ov.Output:
        return ops.constant((rng.standard_normal(shape) * 0.3).astype(np.float32))

    def conv(v: Any, k: Any, strides: list[int] | None = None, dilations: list[int] | None = None,
             pad: int = 1) -> Any:
        return ops.convolution(v, k, strides or [1, 1], [pad, pad], [pad, pad], dilations or [1, 1])

    def step(x_t: Any, h: Any) -> Any:
        a = ops.sigmoid(conv(h, w(3, 3, 3, 3)))
        b = ops.tanh(ops.add(conv(h, w(3, 3, 3, 3)), w(1, 3, 1, 1)))
        c = conv(h, w(3, 3, 3, 3))
        other = {
            "strides": lambda: conv(h, w(2, 3, 3, 3), strides=[2, 2]),
            "dilations": lambda: conv(h, w(2, 3, 3, 3), dilations=[2, 2], pad=2),
            "groups": lambda: ops.group_convolution(h, w(3, 1, 1, 3, 3), [1, 1], [1, 1], [1, 1], [1, 1]),
            "kernel": lambda: conv(h, w(2, 3, 1, 1), pad=0),
            "input": lambda: conv(x_t, w(2, 3, 3, 3)),
        }[extra]()
        axes = ops.constant(np.array([1, 2, 3], np.int64))
        # the step's image read too: OpenVINO runs a TensorIterator whose body ignores its slice only once
        mean = ops.add(ops.reduce_mean(other, axes, True), ops.reduce_mean(x_t, axes, True))
        return ops.tanh(ops.add(ops.add(ops.add(a, b), c), mean))

    return recurrence(kind, steps=3, image=(3, 7, 7), step=step)


@pytest.mark.parametrize("kind", ["ti", "loop"])
@pytest.mark.parametrize("extra", ["strides", "dilations", "groups", "kernel", "input"])
def test_convolutions_of_one_input_merge(tmp_path: Path, kind: str, extra: str) -> None:
    xml = save_ir(_siblings(kind, extra), tmp_path)
    proto = assert_equivalent(xml, rng_inputs([((2, 3, 3, 7, 7), np.float32), ((2, 3, 7, 7), np.float32)]),
                              fuse=False)
    # the other convolution of the step's image runs before the loop (lift_inputs.py)
    assert ops_in(proto.graph, "Conv", bodies=True) == (1 if extra == "input" else 2)
    assert ops_in(proto.graph, "Split", bodies=True) == 1


def test_outside_loops_convolutions_stay_apart(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    X = ops.parameter([1, 3, 7, 7], np.float32, name="X")
    outs = [ops.convolution(X, ops.constant((rng.standard_normal((n, 3, 1, 1)) * 0.3).astype(np.float32)),
                            [1, 1], [0, 0], [0, 0], [1, 1]) for n in (4, 8)]
    xml = save_ir(ov.Model(outs, [X]), tmp_path)
    proto = assert_equivalent(xml, rng_inputs([((1, 3, 7, 7), np.float32)]))
    assert count_ops(proto, "Conv") == 2 and count_ops(proto, "Split") == 0


def test_keras_conv_lstm_gates() -> None:
    """Keras' ConvLSTM2D, as OpenVINO's TensorFlow frontend writes it: four convolutions of the step's image (lifted
    out of the loop, where they stay four) and four of the state (in the body, merged into one)."""
    d = FIXTURES / "tf_conv_lstm_2d"
    stored = np.load(d / "inputs.npz")
    proto = assert_equivalent(d / "model.xml", [stored[n] for n in stored.files], rtol=1e-4)
    assert ops_in(proto.graph, "Conv", bodies=False) == 4 and ops_in(proto.graph, "Conv", bodies=True) == 1
    plain = assert_equivalent(d / "model.xml", [stored[n] for n in stored.files], rtol=1e-4, optimize=False)
    assert count_ops(plain, "Conv") == 8
