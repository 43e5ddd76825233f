"""An onnx-ir model as a ModelProto for onnx's C++ checker and shape inference, and their inferred types read back.

The C++ APIs take a serialised model. Serialising the weights would copy them: the copy made here leaves every
initializer above `INLINE_BYTES` out, as a typed graph input of the same name (checker, inference and onnxruntime's
loader only need its type and shape); small initializers (shapes, axes, scalars) keep their values so that inference
can propagate them. The file's proto is then completed from the validated copy (`complete_weightless`) rather than
serialised again: on a 1,500-layer network a serialisation takes 30-40 ms, completing it 2-3 ms.
"""

from __future__ import annotations

from collections.abc import Collection

import onnx
import onnx_ir as oir

# Initializers up to this size keep their data in the copy (their values feed shape inference).
INLINE_BYTES = 1 << 16


def weightless_proto(model: oir.Model, inline_bytes: int = INLINE_BYTES) -> onnx.ModelProto:
    """The model as a ModelProto whose initializers above `inline_bytes` are graph inputs of the same type and shape
    (no copy)."""
    g = model.graph
    order = list(g.initializers.values())
    large = [v for v in order if v.const_value is not None and v.const_value.nbytes > inline_bytes
             and not v.is_graph_input()]
    n_inputs = len(g.inputs)
    for v in large:
        g.initializers.pop(v.name)  # type: ignore[arg-type]
    g.inputs.extend(large)
    try:
        return oir.to_proto(model)
    finally:
        while len(g.inputs) > n_inputs:
            g.inputs.pop()
        g.initializers.clear()
        for v in order:
            g.initializers.add(v)


def complete_weightless(model: oir.Model, weightless: onnx.ModelProto,
                        changed: Collection[oir.Value]) -> onnx.ModelProto | None:
    """`oir.to_proto(model)`, completed from `weightless`, a `weightless_proto(model)` made before the main graph's
    initializers `changed` got new tensors (external data, say), nothing else having changed since: the initializers
    it left out and the changed ones are serialised and put in their places, their value infos too. `weightless` is
    taken over (changed in place). None where the result could differ from `oir.to_proto(model)` (a changed
    initializer of a subgraph, the copy not matching the model's initializers); then serialise the model."""
    g, gp = model.graph, weightless.graph
    n_inputs = len(g.inputs)
    moved = {vi.name: vi for vi in gp.input[n_inputs:]}
    kept = [t.name for t in gp.initializer]
    if ([name for name in g.initializers if name not in moved] != kept or len(moved) + len(kept) != len(g.initializers)
            or any(g.initializers.get(v.name) is not v for v in changed)  # type: ignore[arg-type]
            or len(gp.quantization_annotation) or len(gp.sparse_initializer)
            or not hasattr(gp.initializer, "insert")):
        return None
    renewed = {v.name for v in changed} | moved.keys()
    del gp.input[n_inputs:]
    at_info = 0  # the value infos of initializers come first, in the initializers' order
    for at, (name, value) in enumerate(g.initializers.items()):
        if name in renewed:
            tensor = value.const_value
            assert tensor is not None
            tensor.name = name  # as onnx-ir names an initializer's tensor when it serialises it
            proto = onnx.TensorProto()
            oir.serde.serialize_tensor_into(proto, tensor)
            if name in moved:
                gp.initializer.insert(at, proto)
            else:
                gp.initializer[at].CopyFrom(proto)
        if name in moved:  # a graph input in the copy: its value info is the one onnx-ir writes for an initializer
            if _has_value_info(value):
                gp.value_info.insert(at_info, moved[name])
                at_info += 1
        elif at_info < len(gp.value_info) and gp.value_info[at_info].name == name:
            at_info += 1
    return weightless


def _has_value_info(value: oir.Value) -> bool:
    """Whether onnx-ir writes a value info for this (named) initializer."""
    return value.shape is not None or value.type is not None or bool(value.metadata_props) or bool(value.doc_string)


def read_inferred(graph: oir.Graph, inferred: onnx.GraphProto) -> None:
    """Give the values of `graph` (bodies included) the types and shapes that shape inference wrote into `inferred`,
    the inferred copy of `graph` (nodes in the same order), where it inferred one. Only the value infos are read:
    deserialising the whole inferred model to copy them took most of the inference's time on large graphs."""
    infos = {vi.name: vi for vi in (*inferred.input, *inferred.value_info, *inferred.output)}
    for value in (*graph.inputs, *(o for n in graph for o in n.outputs)):
        info = infos.get(value.name) if value.name else None
        if info is None:
            continue
        which = info.type.WhichOneof("value")
        if which == "tensor_type":
            _read_tensor_type(value, info.type.tensor_type)
            continue
        if which is None:
            continue
        shape = oir.serde.deserialize_type_proto_for_shape(info.type)
        if shape is not None and value.shape != shape:
            value.shape = shape
        typ = oir.serde.deserialize_type_proto_for_type(info.type)
        if typ is not None and value.dtype != typ.dtype:
            value.dtype = typ.dtype
    for node, proto in zip(graph, inferred.node):
        if node.op_type != proto.op_type:  # not the copy it was made from: read nothing more
            return
        bodies = {a.name: a for a in proto.attribute}
        for attr in node.attributes.values():
            found = bodies.get(attr.name)
            if found is None:
                continue
            if attr.type == oir.AttributeType.GRAPH:
                read_inferred(attr.as_graph(), found.g)
            elif attr.type == oir.AttributeType.GRAPHS:
                for body, body_proto in zip(attr.as_graphs(), found.graphs):
                    read_inferred(body, body_proto)


def _read_tensor_type(value: oir.Value, tensor_type: onnx.TypeProto.Tensor) -> None:
    """As onnx-ir's deserialisers of a tensor TypeProto's shape and type, without their per-call overhead (reading
    back 1,300 values took about 40 ms with them): a shape equal to the value's is not replaced."""
    if tensor_type.HasField("shape"):
        dims: list[int | str | None] = []
        for d in tensor_type.shape.dim:
            if d.denotation:  # kept by the general reader
                value.shape = oir.serde.deserialize_tensor_shape(tensor_type.shape)
                break
            which = d.WhichOneof("value")
            dims.append(d.dim_value if which == "dim_value" else d.dim_param if which == "dim_param" else None)
        else:
            if not _same_dims(value.shape, dims):
                value.shape = oir.Shape([d if isinstance(d, int) else oir.SymbolicDim(d) for d in dims], frozen=True)
    if tensor_type.elem_type:
        dtype = oir.DataType(tensor_type.elem_type)
        if value.dtype != dtype:
            value.dtype = dtype


def _same_dims(shape: oir.Shape | None, dims: list[int | str | None]) -> bool:
    if shape is None or len(shape) != len(dims):
        return False
    for have, want in zip(shape, dims):
        if isinstance(want, int):
            if have != want or not isinstance(have, int):
                return False
        elif isinstance(have, int) or have.value != want:
            return False
    return True
