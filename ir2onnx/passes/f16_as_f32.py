"""Compute a model's float16 tensors in float32, as OpenVINO's CPU plugin computes an f16 IR.

Model Optimizer's FP16 IRs (`--data_type FP16`) are f16 throughout: inputs, weights, every layer. OpenVINO's CPU
plugin runs such a model in f32 (with the f32 precision hint, and by default on CPUs without native f16 arithmetic):
it converts the weights once and computes every f16 layer, explicit conversions to f16 included, in f32. The plain
translation keeps the IR's types instead, which onnxruntime's CPU runs partly in f16 (values are rounded wherever a
loop carries them or a kernel is f16), so its results differ from OpenVINO's by f16's precision and recurrent loops
stay loops (an LSTM whose state is rounded to f16 at every step is not one ONNX LSTM).

This pass gives the translated model OpenVINO's CPU arithmetic: every f16 value, bodies included, becomes f32; f16
weights stay f16 in the file (no copy) and are cast once where they are read; ops whose attributes name f16 (Cast,
ConstantOfShape, Constant, random ops, EyeLike, SequenceEmpty) name f32; the model's f16 inputs and outputs keep
their type at the boundary, cast on the way in and out (rounded once at the end, as OpenVINO's output is).

It is an option (`f16_as_f32`), not a default: the IR's own types are f16, and an explicit conversion to f16 rounds
in numpy (OpenVINO's CPU drops that rounding: a value of 70000 converted to f16 and back stays 70000, numpy gives
inf). It runs before the other passes, so that recurrent fusion sees f32 loops.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from ir2onnx.passes.analysis.graph import all_nodes, subgraphs

F16, F32 = oir.DataType.FLOAT16, oir.DataType.FLOAT

# (op, attribute) pairs that name an element type
_DTYPE_ATTRS = {("Cast", "to"), ("RandomUniform", "dtype"), ("RandomNormal", "dtype"), ("RandomUniformLike", "dtype"),
                ("RandomNormalLike", "dtype"), ("EyeLike", "dtype"), ("Multinomial", "dtype"), ("Bernoulli", "dtype"),
                ("SequenceEmpty", "dtype"), ("MelWeightMatrix", "output_datatype"), ("HannWindow", "output_datatype"),
                ("HammingWindow", "output_datatype"), ("BlackmanWindow", "output_datatype")}
# (op, attribute) pairs that hold a tensor
_TENSOR_ATTRS = {("Constant", "value"), ("ConstantOfShape", "value")}


class F16AsF32Pass(oir.passes.InPlacePass):
    """Rewrite a model's f16 computation to f32 in place."""

    def __init__(self) -> None:
        super().__init__()
        self._keep: set[oir.Node] = set()  # the boundary casts this pass adds

    def call(self, model: oir.Model) -> oir.passes.PassResult:
        graph = model.graph
        self._names = _names(graph)
        self._boundary(graph)
        self._graph(graph)
        return oir.passes.PassResult(model, modified=bool(self._keep))

    def _fresh(self, hint: str) -> str:
        name, k = hint, 0
        while name in self._names:
            k += 1
            name = f"{hint}_{k}"
        self._names.add(name)
        return name

    def _boundary(self, graph: oir.Graph) -> None:
        """Cast the model's f16 inputs to f32 where they are read, and f32 results back to f16 as outputs."""
        for v in graph.inputs:
            if isinstance(v.type, oir.OptionalType):  # a variable's state (translate/ops/state.py): cast where unwrapped
                if _f32_type(v.type) is not None:
                    self._cast_unwrapped(v)
                continue
            if v.dtype == F16 and v.uses():
                cast = self._cast(v, F32)
                graph.insert_before(next(iter(graph)), cast)  # a graph whose input is read has a node
                v.replace_all_uses_with(cast.outputs[0])
                cast.replace_input_with(0, v)
        for i, v in enumerate(graph.outputs):
            if v.dtype != F16 or v in graph.inputs or v.is_initializer():
                continue
            name, v.name = v.name, self._fresh(f"{v.name}__f32")
            cast = self._cast(v, F16)
            self._names.discard(cast.outputs[0].name)
            cast.outputs[0].name = name
            graph.append(cast)
            graph.outputs[i] = cast.outputs[0]

    def _cast_unwrapped(self, v: oir.Value) -> None:
        """The f16 tensors an optional f16 input holds, cast to f32 where OptionalGetElement takes them out."""
        for use in list(v.uses()):
            node = use.node
            if node.op_type != "OptionalGetElement" or node.graph is None:
                continue
            self._keep.add(node)
            out = node.outputs[0]
            cast = self._cast(out, F32)
            out.replace_all_uses_with(cast.outputs[0], replace_graph_outputs=True)  # an If branch's output
            cast.replace_input_with(0, out)
            node.graph.insert_after(node, cast)

    def _cast(self, v: oir.Value, to: oir.DataType) -> oir.Node:
        out = self._fresh(f"{v.name}__{'f32' if to == F32 else 'f16'}")
        node = oir.Node("", "Cast", [v], attributes=[oir.AttrInt64("to", int(to))], name=f"{out}/Cast")
        node.outputs[0].name = out
        node.outputs[0].dtype = to
        node.outputs[0].shape = v.shape
        self._keep.add(node)
        return node

    def _graph(self, graph: oir.Graph) -> None:
        for name, init in list(graph.initializers.items()):
            if init.dtype == F16 and init.uses():
                cast = self._cast(init, F32)
                init.replace_all_uses_with(cast.outputs[0])
                cast.replace_input_with(0, init)
                graph.insert_before(next(iter(graph)), cast)
        for node in list(graph):
            for sub in subgraphs(node):
                for v in sub.inputs:
                    self._retype(v)
                self._graph(sub)
            if node in self._keep:
                continue
            self._attributes(node)
            for v in node.outputs:
                self._retype(v)
            _drop_if_no_op_cast(node, graph)

    def _attributes(self, node: oir.Node) -> None:
        for name, attr in node.attributes.items():
            key = (node.op_type, name)
            if key in _DTYPE_ATTRS and attr.as_int() == int(F16):
                node.attributes[name] = oir.AttrInt64(name, int(F32))
            elif key in _TENSOR_ATTRS and attr.type == oir.AttributeType.TENSOR and attr.as_tensor().dtype == F16:
                array = attr.as_tensor().numpy().astype(np.float32)
                node.attributes[name] = oir.AttrTensor(name, oir.tensor(array, name=attr.as_tensor().name))

    def _retype(self, v: oir.Value) -> None:
        new = _f32_type(v.type)
        if new is not None:
            v.type = new


def _names(graph: oir.Graph) -> set[str]:
    """Every value name in `graph` and its subgraphs."""
    names = {v.name for v in (*graph.inputs, *graph.initializers.values()) if v.name}
    for node in all_nodes(graph):
        for sub in subgraphs(node):
            names |= {v.name for v in (*sub.inputs, *sub.initializers.values()) if v.name}
        names |= {v.name for v in node.outputs if v.name}
    return names


def _drop_if_no_op_cast(node: oir.Node, graph: oir.Graph) -> None:
    """A Cast that now converts f32 to f32 (the translation's casts around f16 kernels onnxruntime lacks) is
    removed, so that later passes see the computation itself."""
    if node.op_type != "Cast" or node.attributes["to"].as_int() != int(F32) or node.inputs[0] is None \
            or node.inputs[0].dtype != F32 or node.outputs[0].is_graph_output():
        return
    node.outputs[0].replace_all_uses_with(node.inputs[0])
    graph.remove(node, safe=True)


def _f32_type(t: oir.TypeProtocol | None) -> oir.TypeProtocol | None:
    """`t` with f16 elements made f32 (tensors, sequences and optionals of them); None when it has none."""
    if isinstance(t, oir.TensorType):
        return oir.TensorType(F32) if t.dtype == F16 else None
    if isinstance(t, oir.SequenceType):
        inner = _f32_type(t.elem_type)
        return oir.SequenceType(inner) if inner is not None else None
    if isinstance(t, oir.OptionalType):
        inner = _f32_type(t.elem_type)
        return oir.OptionalType(inner) if inner is not None else None
    return None
