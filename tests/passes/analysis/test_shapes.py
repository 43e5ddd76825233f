"""Static shapes derived from producers: exact where the shapes are known and valid, None otherwise."""

from __future__ import annotations

import numpy as np
import onnx_ir as oir
import pytest

from ir2onnx.passes.analysis.shapes import StaticShapes


def _value(shape: tuple[int | str, ...]) -> oir.Value:
    return oir.Value(name="in", type=oir.TensorType(oir.DataType.FLOAT), shape=oir.Shape(list(shape)))


def _const(values: list[int]) -> oir.Value:
    return oir.Value(name="c", const_value=oir.tensor(np.array(values, np.int64)))


def _derived(op: str, inputs: list[oir.Value], **attrs: object) -> tuple[int, ...] | None:
    node = oir.Node("", op, inputs, [oir.convenience.convert_attribute(k, v) for k, v in attrs.items()])
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
    squeezed = oir.Node("", "Squeeze", [x, _const([1])])
    proj = oir.Node("", "MatMul", [squeezed.outputs[0], _value((6, 4))])
    act = oir.Node("", "Sigmoid", [proj.outputs[0]])
    shaped = oir.Node("", "Reshape", [act.outputs[0], _const([-1, 2, 2])])
    assert StaticShapes()(shaped.outputs[0]) == (2, 2, 2)


@pytest.mark.parametrize("first", [(2, 6), ("b", 6)], ids=["static", "run-time batch"])
def test_chain_deeper_than_python_recursion_limit(first: tuple[int | str, ...]) -> None:
    """A chain of 5,000 layers whose declared shapes are unknown is walked to its input, on a deep stack."""
    import sys

    v = _value(first)
    for _ in range(5000):
        v = oir.Node("", "Relu", [oir.Node("", "Neg", [v]).outputs[0]]).outputs[0]
    limit = sys.getrecursionlimit()
    assert StaticShapes()(v) == (first if first[0] == 2 else None)
    assert sys.getrecursionlimit() == limit


def _outputs(op: str, inputs: list[oir.Value], n: int = 1, **attrs: object) -> list[tuple[int, ...] | None]:
    node = oir.Node("", op, inputs, [oir.convenience.convert_attribute(k, v) for k, v in attrs.items()], num_outputs=n)
    shapes = StaticShapes()
    return [shapes(o) for o in node.outputs]


@pytest.mark.parametrize("inputs,n,attrs,expected", [
    ([(2, 12), [4, 8]], 2, {"axis": 1}, [(2, 4), (2, 8)]),
    ([(2, 12)], 3, {"axis": -1}, [(2, 4)] * 3),  # equal parts
    ([(2, 12)], 5, {"axis": 1}, [None] * 5),  # 12 is no multiple of 5
    ([(2, 12), [4, 4]], 2, {"axis": 1}, [None, None]),  # sizes that do not add up
    ([("b", 12), [6, 6]], 2, {"axis": 1}, [None, None]),
    ([(2, 12), "run time"], 2, {"axis": 1}, [None, None]),  # sizes given, but not constant: not equal parts
])
def test_split(inputs: list, n: int, attrs: dict, expected: list) -> None:
    values = [_value(inputs[0])] + [_value((n,)) if v == "run time" else _const(v) for v in inputs[1:]]
    assert _outputs("Split", values, n, **attrs) == expected


@pytest.mark.parametrize("shape,starts,ends,axes,steps", [
    ((2, 1024), [0, 256], [2**63 - 1, 512], [0, 1], None),
    ((2, 1024), [512], [2**63 - 1], [-1], None),
    ((5, 7, 3), [-1, 0], [-6, 7], [0, 1], [-1, 2]),
    ((5, 7), [10], [20], [0], None),  # past the end: empty
])
def test_slice_against_numpy(shape: tuple[int, ...], starts: list[int], ends: list[int], axes: list[int],
                             steps: list[int] | None) -> None:
    inputs = [_value(shape), _const(starts), _const(ends), _const(axes)] + ([_const(steps)] if steps else [])
    index = [slice(None)] * len(shape)
    for a, b, e, st in zip(axes, starts, ends, steps or [1] * len(axes)):
        index[a] = slice(b, e, st)
    assert _outputs("Slice", inputs) == [np.zeros(shape)[tuple(index)].shape]


@pytest.mark.parametrize("data,indices,axis,expected", [
    ((100, 1, 128), (), 0, (1, 128)),  # a step read at a scalar index
    ((3, 4, 5), (2, 6), 1, (3, 2, 6, 5)),
    ((3, 4), ("k",), 0, None),
])
def test_gather(data: tuple, indices: tuple, axis: int, expected: tuple | None) -> None:
    idx = oir.Value(name="i", type=oir.TensorType(oir.DataType.INT64), shape=oir.Shape(list(indices)))
    assert _outputs("Gather", [_value(data), idx], axis=axis) == [expected]


def test_infer_shapes_types_values_in_bodies() -> None:
    """ONNX inference's types and shapes reach the values of the main graph and of bodies (an If's branches)."""
    from onnx import TensorProto, helper

    from ir2onnx.passes.analysis.shapes import infer_shapes

    then = helper.make_graph([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Neg", ["r"], ["n"])], "then",
                             [], [helper.make_tensor_value_info("n", TensorProto.UNDEFINED, None)])
    other = helper.make_graph([helper.make_node("Sigmoid", ["x"], ["s"])], "else", [],
                              [helper.make_tensor_value_info("s", TensorProto.UNDEFINED, None)])
    graph = helper.make_graph(
        [helper.make_node("Tanh", ["x"], ["t"]),
         helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
              helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.UNDEFINED, None)])
    model = oir.serde.deserialize_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    values = {v.name: v for n in oir.traversal.RecursiveGraphIterator(model.graph) for v in n.outputs}
    assert all(v.shape is None for v in values.values())
    infer_shapes(model)
    assert {name: (v.dtype, tuple(v.shape) if v.shape is not None else None) for name, v in values.items()} == {
        name: (oir.DataType.FLOAT, (2, 3)) for name in ("t", "r", "n", "s", "y")}


def _node(op: str, inputs: list[oir.Value], n: int = 1, **attrs: object) -> oir.Node:
    return oir.Node("", op, inputs, [oir.convenience.convert_attribute(k, v) for k, v in attrs.items()], num_outputs=n)


def _declared(v: oir.Value, shape: tuple[int, ...]) -> oir.Value:
    v.shape = oir.Shape(list(shape))
    return v


def _differences() -> list:
    """(value, values.shape_of's answer, StaticShapes' answer): the differences the module docstring lists."""
    run_time_cut = _node("Slice", [_value((4, 3)), _value((1,)), _value((1,)), _const([0])]).outputs[0]
    constant = _node("Constant", [], value=oir.tensor(np.array([1], np.int64))).outputs[0]
    return [
        pytest.param(_node("Relu", [_value(("b", 3))]).outputs[0], (None, 3), None, id="unknown dims"),
        pytest.param(_declared(_node("Slice", [_value((2, 6)), _const([0]), _const([3]), _const([1])]).outputs[0],
                               (2, 3)), (2, None), (2, 3), id="declared shape"),
        pytest.param(_declared(_node("Reshape", [_value((2, 3)), _const([3, 2])]).outputs[0], (2, 3)), (3, 2), (2, 3),
                     id="stale declared shape"),
        pytest.param(constant, None, (1,), id="Constant node"),
        pytest.param(_node("Squeeze", [run_time_cut, _const([0])]).outputs[0], (3,), None, id="run-time Slice"),
        pytest.param(_node("Add", [_value((2, 3)), _value((4,))]).outputs[0], (2, 3), None, id="no broadcast"),
        pytest.param(_node("LSTM", [_value((5, 2, 4))], 3, hidden_size=8).outputs[0], None, (5, 1, 2, 8), id="LSTM"),
        pytest.param(_node("Flatten", [_value((2, 3, 4))]).outputs[0], None, (2, 12), id="Flatten"),
    ]


@pytest.mark.parametrize("value,partial,static", _differences())
def test_differs_from_shape_of(value: oir.Value, partial: tuple | None, static: tuple | None) -> None:
    """Two analyses on purpose (see the module docstring): neither is the other's answer."""
    from ir2onnx.passes.analysis.values import shape_of

    assert (shape_of(value), StaticShapes()(value)) == (partial, static)
