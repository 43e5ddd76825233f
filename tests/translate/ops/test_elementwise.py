"""Element-wise, comparison, logical and activation ops (elementwise.py, activations.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino.opset1 as ops1
import openvino.opset13 as ops
import pytest
from openvino.utils.node_factory import NodeFactory

from tests.translate.ops.cases import Case, params, run_case

F, I32, I64, B = np.float32, np.int32, np.int64, np.bool_
POS = np.abs(np.random.default_rng(3).standard_normal((2, 3)).astype(F)) + 0.1

I8, I16, U8, U16 = np.int8, np.int16, np.uint8, np.uint16

CASES = [
    *[Case(f"{name}-{np.dtype(t).name}", fn, [((6,), t), ((6,), t)],
           values=[np.array([-3, 0, 5, 7, 100, 2], t) if np.dtype(t).kind == "i" else np.array([3, 0, 5, 7, 200, 2], t),
                   np.array([2, 0, -4, 3, 1, 9], t) if np.dtype(t).kind == "i" else np.array([2, 0, 4, 3, 1, 9], t)])
      for name, fn in (("maximum", lambda a, b: ops.maximum(a, b)), ("minimum", lambda a, b: ops.minimum(a, b)))
      for t in (I8, I16, U8, U16)],  # onnxruntime has no Max/Min kernels for these: computed wider
    *[Case(f"power-{np.dtype(t).name}", lambda a, b: ops.power(a, b), [((5,), t), ((5,), t)],
           values=[np.array([2, 3, 0, 1, 5], t), np.array([3, 2, 4, 0, 3], t)]) for t in (I8, I16, U8, U16)],
    Case("add-broadcast", lambda a, b: ops.add(a, b), [((2, 3), F), ((3,), F)]),
    Case("add-none", lambda a, b: ops.add(a, b, auto_broadcast="none"), [((2, 3), F), ((2, 3), F)]),
    Case("subtract-i32", lambda a, b: ops.subtract(a, b), [((2, 3), I32), ((2, 3), I32)]),
    Case("multiply-i64", lambda a, b: ops.multiply(a, b), [((4,), I64), ((1,), I64)]),
    Case("divide-f32", lambda a, b: ops.divide(a, b), [((2, 3), F), ((2, 3), F)],
         values=[np.ones((2, 3), F), POS]),
    Case("divide-i32-positive", lambda a, b: ops.divide(a, b), [((4,), I32), ((4,), I32)],
         values=[np.array([7, 8, 9, 10], I32), np.array([2, 3, 4, 5], I32)]),
    Case("divide-i32-negative", lambda a, b: ops.divide(a, b), [((4,), I32), ((4,), I32)],
         values=[np.array([-7, 7, -8, 9], I32), np.array([2, -2, 3, -4], I32)]),
    Case("divide-i64-negative", lambda a, b: ops.divide(a, b), [((4,), I64), ((4,), I64)],
         values=[np.array([-7, 7, -8, 9], I64), np.array([2, -2, 3, -4], I64)]),
    Case("floor-mod-i32", lambda a, b: ops.floor_mod(a, b), [((4,), I32), ((4,), I32)],
         values=[np.array([-7, 7, -8, 9], I32), np.array([2, -2, 3, -4], I32)]),
    Case("floor-mod-f32", lambda a, b: ops.floor_mod(a, b), [((4,), F), ((4,), F)],
         values=[np.array([-7.5, 7.5, -8.0, 9.25], F), np.array([2.0, -2.0, 3.0, -4.0], F)]),
    Case("mod-i32", lambda a, b: ops.mod(a, b), [((4,), I32), ((4,), I32)],
         values=[np.array([-7, 7, -8, 9], I32), np.array([2, -2, 3, -4], I32)]),
    Case("mod-f32", lambda a, b: ops.mod(a, b), [((4,), F), ((4,), F)],
         values=[np.array([-7.5, 7.5, -8.0, 9.25], F), np.array([2.0, -2.0, 3.0, -4.0], F)]),
    Case("maximum", lambda a, b: ops.maximum(a, b), [((2, 3), F), ((1, 3), F)]),
    Case("minimum-i32", lambda a, b: ops.minimum(a, b), [((2, 3), I32), ((2, 3), I32)]),
    Case("power", lambda a, b: ops.power(a, b), [((2, 3), F), ((2, 3), F)], values=[POS, POS]),
    Case("squared-difference", lambda a, b: ops.squared_difference(a, b), [((2, 3), F), ((3,), F)]),
    Case("equal-i32", lambda a, b: ops.equal(a, b), [((6,), I32), ((6,), I32)]),
    Case("not-equal", lambda a, b: ops.not_equal(a, b), [((6,), I32), ((1,), I32)]),
    Case("less", lambda a, b: ops.less(a, b), [((2, 3), F), ((2, 3), F)]),
    Case("less-equal", lambda a, b: ops.less_equal(a, b), [((2, 3), I64), ((2, 3), I64)]),
    Case("greater", lambda a, b: ops.greater(a, b), [((2, 3), F), ((3,), F)]),
    Case("greater-equal", lambda a, b: ops.greater_equal(a, b), [((2, 3), I32), ((2, 3), I32)]),
    Case("logical-and", lambda a, b: ops.logical_and(a, b), [((4,), B), ((4,), B)]),
    Case("logical-or", lambda a, b: ops.logical_or(a, b), [((4,), B), ((4,), B)]),
    Case("logical-xor", lambda a, b: ops.logical_xor(a, b), [((4,), B), ((4,), B)]),
    Case("xor-1", lambda a, b: NodeFactory("opset1").create("Xor", [a.output(0), b.output(0)],
                                                             {"auto_broadcast": "numpy"}), [((2, 4), B), ((4,), B)]),
    Case("logical-not", lambda a: ops.logical_not(a), [((4,), B)]),
    Case("select", lambda c, a, b: ops.select(c, a, b), [((2, 3), B), ((2, 3), F), ((3,), F)]),
    Case("negative", lambda a: ops.negative(a), [((2, 3), F)]),
    Case("abs-i32", lambda a: ops.abs(a), [((5,), I32)]),
    Case("exp", lambda a: ops.exp(a), [((2, 3), F)]),
    Case("log", lambda a: ops.log(a), [((2, 3), F)], values=[POS]),
    Case("sqrt", lambda a: ops.sqrt(a), [((2, 3), F)], values=[POS]),
    Case("floor", lambda a: ops.floor(a), [((2, 3), F)]),
    Case("ceiling", lambda a: ops.ceiling(a), [((2, 3), F)]),
    Case("sigmoid", lambda a: ops.sigmoid(a), [((2, 3), F)]),
    Case("tanh", lambda a: ops.tanh(a), [((2, 3), F)]),
    Case("relu", lambda a: ops.relu(a), [((2, 3), F)]),
    Case("clamp-f32", lambda a: ops.clamp(a, -0.5, 0.7), [((2, 5), F)]),
    Case("clamp-i32", lambda a: ops.clamp(a, -2.5, 3.7), [((8,), I32)]),
    Case("softmax-1", lambda a: ops1.softmax(a, 1), [((2, 3, 4), F)]),
    Case("softmax-8-negative-axis", lambda a: ops.softmax(a, -1), [((2, 3, 4), F)]),
    Case("log-softmax", lambda a: ops.log_softmax(a, 2), [((2, 3, 4), F)]),
    Case("round-half-even", lambda a: ops.round(a, "half_to_even"), [((6,), F)],
         values=[np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.3], F)]),
    Case("round-half-away", lambda a: ops.round(a, "half_away_from_zero"), [((6,), F)],
         values=[np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.3], F)]),
    Case("atan", lambda a: ops.atan(a), [((2, 3), F)]),
    Case("sinh", lambda a: ops.sinh(a), [((2, 3), F)]),
    Case("elu", lambda a: ops.elu(a, 0.7), [((2, 3), F)]),
    Case("hsigmoid", lambda a: ops.hsigmoid(a), [((2, 3), F)], values=[np.linspace(-4, 4, 6, dtype=F).reshape(2, 3)]),
    Case("hswish", lambda a: ops.hswish(a), [((2, 3), F)], values=[np.linspace(-4, 4, 6, dtype=F).reshape(2, 3)]),
    Case("mish", lambda a: ops.mish(a), [((2, 3), F)]),
    Case("softplus", lambda a: ops.softplus(a), [((2, 3), F)]),
    Case("softsign", lambda a: ops.softsign(a), [((2, 3), F)]),
    Case("swish", lambda a: ops.swish(a), [((2, 3), F)]),
    Case("swish-beta", lambda a: ops.swish(a, ops.constant(np.float32(1.7))), [((2, 3), F)]),
    Case("gelu-erf", lambda a: ops.gelu(a, "erf"), [((2, 3), F)]),
    Case("gelu-tanh", lambda a: ops.gelu(a, "tanh"), [((2, 3), F)]),
    Case("prelu-channel", lambda a: ops.prelu(a, ops.constant(np.array([0.1, 0.2, 0.3], F))), [((2, 3, 4, 4), F)]),
    Case("prelu-scalar", lambda a: ops.prelu(a, ops.constant(np.array([0.25], F))), [((2, 3), F)]),
]


@pytest.mark.parametrize("case", params(CASES))
def test_elementwise(tmp_path: Path, case: Case) -> None:
    run_case(case, tmp_path)
