"""Reading inferred types back (protos.read_inferred): what onnx-ir's own deserialisers read, faster."""

from __future__ import annotations

import onnx
import onnx_ir as oir
import pytest
from onnx import TensorProto, helper

from ir2onnx.protos import complete_weightless, read_inferred, weightless_proto

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def _with_denotation() -> onnx.TypeProto:
    t = helper.make_tensor_type_proto(F, [2, "n"])
    t.tensor_type.shape.dim[0].denotation = "DATA_BATCH"
    return t


TYPES = {
    "static": helper.make_tensor_type_proto(F, [2, 3]),
    "symbolic": helper.make_tensor_type_proto(F, ["batch", 3]),
    "unknown dim": helper.make_tensor_type_proto(I64, [None, 0]),
    "scalar": helper.make_tensor_type_proto(I64, []),
    "no shape": helper.make_tensor_type_proto(F, None),
    "no element type": helper.make_tensor_type_proto(0, [4]),
    "denotation": _with_denotation(),
    "sequence": helper.make_sequence_type_proto(helper.make_tensor_type_proto(F, [5])),
}
STARTS = {
    "none": (None, None),
    "same": (oir.DataType.FLOAT, oir.Shape([2, 3])),
    "stale": (oir.DataType.DOUBLE, oir.Shape([7, oir.SymbolicDim("m")])),
    "symbolic": (oir.DataType.FLOAT, oir.Shape(["batch", 3])),
}


def _read(type_proto: onnx.TypeProto, start: tuple) -> oir.Value:  # type: ignore[type-arg]
    value = oir.Value(name="v", type=None, shape=start[1])
    if start[0] is not None:
        value.dtype = start[0]
    graph = oir.Graph([value], [], nodes=[], name="g")
    inferred = helper.make_graph([], "g", [helper.make_value_info("v", type_proto)], [])
    read_inferred(graph, inferred)
    return value


def _expected(type_proto: onnx.TypeProto, start: tuple) -> tuple:  # type: ignore[type-arg]
    """What the reader did with onnx-ir's deserialisers."""
    dtype, shape = start
    found_shape = oir.serde.deserialize_type_proto_for_shape(type_proto)
    if found_shape is not None and shape != found_shape:
        shape = found_shape
    found_type = oir.serde.deserialize_type_proto_for_type(type_proto)
    if found_type is not None and dtype != found_type.dtype:
        dtype = found_type.dtype
    return dtype, shape


@pytest.mark.parametrize("start", STARTS, ids=list(STARTS))
@pytest.mark.parametrize("case", TYPES, ids=list(TYPES))
def test_read_inferred_reads_as_onnx_ir(case: str, start: str) -> None:
    value = _read(TYPES[case], STARTS[start])
    if case == "no element type":  # onnx-ir's reader makes it UNDEFINED: a type known before is kept instead
        dtype, shape = STARTS[start][0], oir.serde.deserialize_type_proto_for_shape(TYPES[case])
    else:
        dtype, shape = _expected(TYPES[case], STARTS[start])
    assert value.dtype == dtype
    assert value.shape == shape
    if shape is not None:
        assert list(value.shape) == list(shape)  # dims, symbolic names included
        assert [d.value if isinstance(d, oir.SymbolicDim) else d for d in value.shape] == \
            [d.value if isinstance(d, oir.SymbolicDim) else d for d in shape]
        assert [value.shape.get_denotation(i) for i in range(len(shape))] == \
            [shape.get_denotation(i) for i in range(len(shape))]


def test_an_equal_shape_is_kept() -> None:
    shape = oir.Shape(["batch", 3])
    value = _read(TYPES["symbolic"], (oir.DataType.FLOAT, shape))
    assert value.shape is shape


def _model_with_body_weight() -> oir.Model:
    """y = x + w, and a Loop whose body adds a weight of its own."""
    import numpy as np

    def weight(name: str) -> oir.Value:
        return oir.Value(name=name, const_value=oir.tensor(np.arange(600, dtype=np.float32), name=name),
                        shape=oir.Shape([600]), type=oir.TensorType(oir.DataType.FLOAT))

    x = oir.Value(name="x", shape=oir.Shape([600]), type=oir.TensorType(oir.DataType.FLOAT))
    w, bw = weight("w"), weight("bw")
    i, cond, carried = (oir.Value(name=n) for n in ("i", "cond_in", "carried"))
    body_add = oir.node("Add", [carried, bw])
    cond_out = oir.node("Identity", [cond])
    body = oir.Graph([i, cond, carried], [cond_out.outputs[0], body_add.outputs[0]], nodes=[body_add, cond_out],
                    initializers=[bw], name="body")
    add = oir.node("Add", [x, w])
    trip = oir.Value(name="trip", const_value=oir.tensor(np.array(2, np.int64), name="trip"))
    loop = oir.node("Loop", [trip, None, add.outputs[0]], attributes={"body": body})
    graph = oir.Graph([x], [loop.outputs[0]], nodes=[add, loop], initializers=[w, trip], name="g",
                     opset_imports={"": 19})
    return oir.Model(graph, ir_version=9)


def test_completed_proto_is_the_serialised_one() -> None:
    model = _model_with_body_weight()
    w = model.graph.initializers["w"]
    weightless = weightless_proto(model, 1024)
    assert [t.name for t in weightless.graph.initializer] == ["trip"]
    w.const_value = oir.ExternalTensor("m.bin", 64, 2400, oir.DataType.FLOAT, shape=oir.Shape([600]), name="w")
    completed = complete_weightless(model, weightless, [w])
    assert completed is not None
    assert completed.SerializeToString() == oir.to_proto(model).SerializeToString()


def test_completion_declined_where_it_could_differ() -> None:
    model = _model_with_body_weight()
    body_weight = model.graph.node(1).attributes["body"].as_graph().initializers["bw"]
    assert complete_weightless(model, weightless_proto(model, 1024), [body_weight]) is None
    other = _model_with_body_weight()
    other.graph.initializers.pop("trip")
    assert complete_weightless(model, weightless_proto(other, 1024), []) is None
