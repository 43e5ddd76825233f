"""Static shapes derived from producers: exact where the shapes are known and valid, None otherwise."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
import pytest

from ir2onnx.passes.static_shapes import StaticShapes


def _value(shape: tuple[int | str, ...]) -> ir.Value:
    return ir.Value(name="in", type=ir.TensorType(ir.DataType.FLOAT), shape=ir.Shape(list(shape)))


def _const(values: list[int]) -> ir.Value:
    return ir.Value(name="c", const_value=ir.tensor(np.array(values, np.int64)))


def _derived(op: str, inputs: list[ir.Value], **attrs: object) -> tuple[int, ...] | None:
    node = ir.Node("", op, inputs, [ir.convenience.convert_attribute(k, v) for k, v in attrs.items()])
    return StaticShapes()(node.outputs[0])


@pytest.mark.parametrize("op,shapes,expected", [
    ("Relu", [(2, 3)], (2, 3)),
    ("Tanh", [("b", 3)], None),  # a symbolic dim is no static dim
    ("Add", [(2, 1, 4), (3, 1)], (2, 3, 4)),
    ("Mul", [(4,), (2, 1)], (2, 4)),
    ("Sub", [(2, 3), (4,)], None),  # does not broadcast
    ("MatMul", [(5, 2, 3), (3, 7)], (5, 2, 7)),
    ("MatMul", [(3,), (3, 7)], (7,)),
    ("MatMul", [(2, 3), (3,)], (2,)),
    ("MatMul", [(4, 1, 2, 3), (5, 3, 6)], (4, 5, 2, 6)),
    ("MatMul", [(2, 3), (4, 5)], None),  # inner dims differ
])
def test_computed_shapes(op: str, shapes: list[tuple[int | str, ...]], expected: tuple[int, ...] | None) -> None:
    assert _derived(op, [_value(s) for s in shapes]) == expected


def test_chains_through_reshapes() -> None:
    x = _value((2, 1, 6))
    squeezed = ir.Node("", "Squeeze", [x, _const([1])])
    proj = ir.Node("", "MatMul", [squeezed.outputs[0], _value((6, 4))])
    act = ir.Node("", "Sigmoid", [proj.outputs[0]])
    shaped = ir.Node("", "Reshape", [act.outputs[0], _const([-1, 2, 2])])
    assert StaticShapes()(shaped.outputs[0]) == (2, 2, 2)
