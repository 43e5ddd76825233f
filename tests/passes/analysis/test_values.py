"""The passes' shape and constant derivation (analysis/values.py: shape_of / const_array) on unrolled recurrences."""

from __future__ import annotations

import numpy as np
import onnx
import onnx_ir as oir
import pytest
from onnx import TensorProto, helper

from ir2onnx.passes import rewrite
from ir2onnx.passes.analysis import values as derived


def unrolled(steps: int) -> oir.Graph:
    """c_t = Squeeze(Unsqueeze(c_t-1 * a + c_t-1 * b)) for `steps` steps, and the Shape of each: every state is read
    along two paths, as an unrolled LSTMCell reads c_t-1 through both of its products (PyTorch's traced cell
    loops)."""
    nodes = []
    c = "c0"
    for t in range(1, steps + 1):
        nodes += [helper.make_node("Mul", [c, "a"], [f"p{t}"]), helper.make_node("Mul", [c, "b"], [f"q{t}"]),
                  helper.make_node("Add", [f"p{t}", f"q{t}"], [f"s{t}"]),
                  helper.make_node("Unsqueeze", [f"s{t}", "axis0"], [f"u{t}"]),
                  helper.make_node("Squeeze", [f"u{t}", "axis0"], [f"c{t}"]),
                  helper.make_node("Shape", [f"c{t}"], [f"shape{t}"])]
        c = f"c{t}"
    graph = helper.make_graph(
        nodes, "unrolled", [helper.make_tensor_value_info("c0", TensorProto.FLOAT, ["batch", 8])],
        [helper.make_tensor_value_info(c, TensorProto.FLOAT, None),
         helper.make_tensor_value_info(f"shape{steps}", TensorProto.INT64, None)],
        [onnx.numpy_helper.from_array(np.float32([2.0]), "a"), onnx.numpy_helper.from_array(np.float32([3.0]), "b"),
         onnx.numpy_helper.from_array(np.int64([0]), "axis0")])
    return oir.serde.deserialize_graph(graph)


@pytest.mark.parametrize("query", ["shape_of", "const_array"])
def test_each_value_is_derived_once(monkeypatch: pytest.MonkeyPatch, query: str) -> None:
    """Derivation walks producers once per query: 14 steps read along 2^14 paths; 40 would never finish."""
    steps = 14
    graph = unrolled(steps)
    calls = {"derive": 0, "fold": 0}
    derive, fold = derived._derive, derived._fold

    def counted_derive(*args: object) -> object:
        calls["derive"] += 1
        return derive(*args)  # type: ignore[arg-type]

    def counted_fold(*args: object) -> object:
        calls["fold"] += 1
        return fold(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(derived, "_derive", counted_derive)
    monkeypatch.setattr(derived, "_fold", counted_fold)
    if query == "shape_of":
        assert derived.shape_of(graph.outputs[0]) == (None, 8)
    else:  # the last state's Shape reads a run-time batch: not a constant, found without walking every path
        assert derived.const_array(graph.outputs[1]) is None
    assert calls["derive"] + calls["fold"] <= 2 * len(graph)


def chain(length: int) -> oir.Graph:
    """x -> Relu -> Relu -> ... (`length` nodes), each output also reduced (ReduceMean over axis -1)."""
    nodes = []
    for t in range(1, length + 1):
        nodes += [helper.make_node("Relu", [f"x{t - 1}"], [f"x{t}"]),
                  helper.make_node("ReduceMean", [f"x{t}"], [f"m{t}"], axes=[-1], keepdims=0)]
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x0", TensorProto.FLOAT, ["batch", 8])],
        [helper.make_tensor_value_info(f"m{t}", TensorProto.FLOAT, None) for t in range(1, length + 1)])
    return oir.serde.deserialize_graph(graph)


@pytest.mark.parametrize("query", ["shape_of", "const_array"])
def test_deeper_than_python_recursion_limit(query: str) -> None:
    """A walk over a chain of 5,000 layers, several frames each, goes on past Python's limit of 1,000 frames (on a
    deep stack) and leaves the limit as it was."""
    import sys

    graph = chain(5000)
    limit = sys.getrecursionlimit()
    last = graph.node(2 * 5000 - 2).outputs[0]
    if query == "shape_of":
        assert derived.shape_of(last) == (None, 8)
    else:
        assert derived.const_array(last) is None
    assert sys.getrecursionlimit() == limit


def test_derivations_block_walks_each_value_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Within a derivations() block the queries share one table: shapes of all 300 values of a chain cost one walk,
    where a table per query walks the chain once per value (quadratic)."""
    graph = chain(300)
    calls = [0]
    derive = derived._derive

    def counted(*args: object) -> object:
        calls[0] += 1
        return derive(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(derived, "_derive", counted)
    values = [n.outputs[0] for n in graph if n.op_type == "Relu"]
    with derived.derivations():
        assert all(derived.shape_of(v) == (None, 8) for v in values)
    assert calls[0] <= 300
    calls[0] = 0
    assert all(derived.shape_of(v) == (None, 8) for v in values[:30])
    assert calls[0] == sum(range(1, 31))  # without the block: each query walks back to the input


ATTRIBUTE_VALUES = {
    "int": 3, "negative int": -1, "bool": True, "float": 0.25, "string": "Tanh", "ints": [1, 0, 2], "int tuple": (0,),
    "floats": [0.5, 1.0], "strings": ["Sigmoid", "Tanh"],
    "graph": oir.Graph([], [], nodes=[], name="body"),
    "tensor": oir.tensor(np.float32([1, 2])),
}


@pytest.mark.parametrize("kind", ATTRIBUTE_VALUES, ids=list(ATTRIBUTE_VALUES))
def test_attributes_as_onnx_ir_converts_them(kind: str) -> None:
    value = ATTRIBUTE_VALUES[kind]
    (fast,) = rewrite.attributes({"a": value})
    (general,) = oir.convenience.convert_attributes({"a": value})
    assert (fast.name, fast.type) == (general.name, general.type)
    if fast.type == oir.AttributeType.GRAPH:
        assert fast.value is general.value
    elif fast.type == oir.AttributeType.TENSOR:
        assert np.array_equal(fast.value.numpy(), general.value.numpy())
    else:
        assert list(fast.value) == list(general.value) if isinstance(general.value, (list, tuple)) \
            else fast.value == general.value


@pytest.mark.parametrize("value", [np.int64(2), [1, 2.5]], ids=["numpy int", "mixed list"])
def test_attributes_refuses_what_onnx_ir_refuses(value: object) -> None:
    with pytest.raises(TypeError):
        oir.convenience.convert_attributes({"a": value})
    with pytest.raises(TypeError):
        rewrite.attributes({"a": value})
